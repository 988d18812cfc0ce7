// Spiral: a two-layer MLP learns to tell three interleaved spirals apart (CS231n's toy
// problem). Small, real and quick: the loss falls from ln 3 ≈ 1.10 to about 0.1 and the
// accuracy climbs to ~99% in a couple of seconds.
//
//   build/examples/spiral [--epochs N] [--trace]   (--help lists every option)
//
// --trace prints every backward node of the first step (the same as XTGRAD_TRACE=1).
#include "examples/common/cli.hpp"
#include "examples/common/spiral_data.hpp"
#include "examples/common/training.hpp"
#include <xtgrad/nn/layers.hpp>
#include <xtgrad/optim/optimizer.hpp>
#include <xtgrad/xtgrad.hpp>

#include "examples/common/cli11.hpp"

#include <cmath>
#include <string>

using namespace xtgrad;

namespace {

struct MLP : nn::Module {
    std::shared_ptr<nn::Linear> fc1 = register_module("fc1", std::make_shared<nn::Linear>(2, 64));
    std::shared_ptr<nn::Linear> fc2 = register_module("fc2", std::make_shared<nn::Linear>(64, 3));
    Tensor forward(const Tensor& x) const { return fc2->forward(relu(fc1->forward(x))); }  // x: (N, 2) -> (N, 3)
};

}  // namespace

int main(int argc, char** argv) {
    long epochs = 300;
    double lr = 1e-2;
    bool trace = false;
    std::uint64_t seed = 0;
    int threads = 1;
    std::string out = "spiral_out";
    examples::RunOptions run_options;
    CLI::App app{"Train a two-layer MLP to tell three spirals apart.", "spiral"};
    examples::add_total_option(app, epochs, "epoch", "full-batch steps");
    app.add_flag("--trace", trace, "print every backward node of the first epoch (as XTGRAD_TRACE=1 does for all)");
    app.add_option("--seed", seed, "seed of the initial weights (manual_seed) and of the points")->capture_default_str()->transform(cli::seed_value());
    app.add_option("--lr", lr, "Adam learning rate (> 0; an absurd one, e.g. 1e30, makes epoch 2's loss NaN: "
                                "how tests/examples/run_cli_tests.sh checks the stop)")
        ->capture_default_str()
        ->check(cli::positive_finite());
    cli::add_threads_option(app, threads);
    app.add_option("--out", out, "folder for the run (spiral.safetensors) and report.html (created; must be writable; "
                                "--out '' writes nothing)")->capture_default_str();
    examples::add_run_options(app, run_options, "epoch");
    return cli::run_main(app, argc, argv, [&] {
        if (!out.empty()) examples::require_writable_folder(out, "--out");
        cli::apply_threads(threads);
        manual_seed(seed);
        Generator gen(seed);
        Tensor x;
        Ids y;
        make_spirals(x, y, gen);
        MLP model;
        optim::Adam opt(model.parameters(), optim::AdamOptions(lr));
        examples::TrainingRun run(run_options, "epoch", out.empty() ? std::string() : fmt::format("{}/spiral.safetensors", out), model,
                                  {.optimizer = &opt, .generators = {}}, {{"seed", std::to_string(seed)}, {"lr", fmt::format("{}", lr)}});
        run.check_options(epochs);
        run.start_report(out, {.title = fmt::format("spiral: lr {:g}, seed {}", lr, seed)});
        const long done = run.start(epochs);
        // The layer sizes from the model itself, so that a learner's extra layer shows (lesson 5).
        std::string sizes = "2";
        for (const auto& [name, p] : model.named_parameters())
            if (name.ends_with(".bias")) sizes += fmt::format("-{}", p.numel());
        fmt::print("spiral: {} points, 3 classes, MLP {} ({} parameters)\n", x.size(0), sizes, model.num_parameters());
        fmt::print("first weights: {}\n", narrow(model.fc1->weight, 0, 0, 2));

        for (long epoch = done + 1; epoch <= epochs; ++epoch) {
            if (trace) set_trace(epoch == 1);  // without --trace, XTGRAD_TRACE=1 decides
            Tensor logits;
            Tensor loss;
            run.step(epoch, [&] {
                logits = model.forward(x);
                loss = cross_entropy(logits, y);
                run.backward(loss);
                return loss;
            });
            run.done(epoch, epochs);
            if (epoch == 1 || epoch % 50 == 0) {
                const Ids pred = argmax(logits, 1);
                std::size_t correct = 0;
                for (std::size_t i = 0; i < y.size(); ++i) correct += pred(i) == y(i);
                fmt::print("epoch {:4d}  loss {:.4f}  accuracy {:.1f}%\n", epoch, loss.item(),
                           100.0 * static_cast<double>(correct) / static_cast<double>(y.size()));
            }
            if (epoch == 1) fmt::print("loss tensor: {}\n", loss);
        }
        if (done == epochs) run.finish_untrained();
        run.report().finish();
        return cli::kSuccess;
    });
}
