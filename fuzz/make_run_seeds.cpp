// Writes the run-checkpoint fuzz target's seeds with xtgrad's own writers: the run checkpoint
// of fuzz/run_checkpoint.hpp's run, the same at epoch 0 (no optimizer state), and its model
// alone (a --save-init or PyTorch file).
//   make_run_seeds DIR
#include "fuzz/run_checkpoint.hpp"

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make_run_seeds DIR\n");
        return 2;
    }
    const std::string dir = argv[1];
    xtgrad::fuzz::TrainedRun run;
    xtgrad::nn::save_run(dir + "/run.safetensors", run.net, run.state, {{"seed", "0"}});
    xtgrad::nn::save(run.net, dir + "/model.safetensors");
    xtgrad::fuzz::TrainedRun fresh;
    xtgrad::optim::Adam untrained(fresh.net.parameters(), xtgrad::optim::AdamOptions(0.01));
    xtgrad::nn::save_run(dir + "/epoch0.safetensors", fresh.net,
                         {.optimizer = &untrained, .generators = {{"data", &fresh.gen}}});
    std::printf("wrote 3 run-checkpoint seeds\n");
    return 0;
}
