// Writes the run-checkpoint fuzz target's seeds with xtgrad's own writers: the run checkpoint
// of fuzz/run_checkpoint.hpp's run, the same at epoch 0 (no optimizer state), its model alone
// (a --save-init or PyTorch file), and its generator's state as bytes, with its check and
// without (as earlier builds wrote it).
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
    const std::vector<std::uint8_t> state = run.gen.state();
    const std::string text(state.begin(), state.end());
    for (const auto& [name, bytes] : {std::pair{"/generator_state", text}, std::pair{"/generator_state_unchecked",
                                                                                      text.substr(text.find(' ') + 1)}}) {
        std::FILE* f = std::fopen((dir + name).c_str(), "wb");
        if (f == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() || std::fclose(f) != 0) {
            std::fprintf(stderr, "make_run_seeds: cannot write %s%s\n", dir.c_str(), name);
            return 1;
        }
    }
    std::printf("wrote 5 run-checkpoint seeds\n");
    return 0;
}
