// Writes the report of a long run, for tests/report/browser_test.py's load-time check: a small
// MLP trained for --steps steps (10,000 by default) with every per-module statistic recorded,
// a validation loss every 100 steps, and attention maps of 2 layers x 4 heads; its title and
// token labels hold markup, which the page must show as text (docs/reliability.md). With --live
// the page is written as a run in progress writes it (it reloads itself), for the live check.
// With --diverge S a weight turns NaN after step S: the loss of step S + 1 is NaN, which the
// loop's guard ends the run on (RunReport::finish_with_error), for the check of non-finite values;
// its title holds a Latin-1 byte (not UTF-8), which the page shows as U+FFFD and notes.
//
//   build/tests/long_report OUT.html [--steps N] [--live] [--diverge S]
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/random/random.hpp>
#include <xtgrad/nn/layers.hpp>
#include <xtgrad/optim/optimizer.hpp>
#include <xtgrad/report/run_report.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace xtgrad;

namespace {

class Mlp : public nn::Module {
public:
    Mlp() {
        fc1 = register_module("fc1", std::make_shared<nn::Linear>(4, 16));
        fc2 = register_module("fc2", std::make_shared<nn::Linear>(16, 16));
        fc3 = register_module("fc3", std::make_shared<nn::Linear>(16, 3));
    }
    Tensor forward(const Tensor& x) const {
        auto scope = enter(x);
        return scope.output(fc3->forward(relu(fc2->forward(relu(fc1->forward(x))))));
    }
    std::shared_ptr<nn::Linear> fc1, fc2, fc3;
};

}  // namespace

int main(int argc, char** argv) {
    long steps = 10000, diverge = 0;
    bool live = false, ok = argc >= 2;
    for (int i = 2; ok && i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--live") live = true;
        else if (arg == "--steps" && i + 1 < argc) steps = std::atol(argv[++i]);
        else if (arg == "--diverge" && i + 1 < argc) diverge = std::atol(argv[++i]);
        else ok = false;
    }
    if (!ok || steps < 1 || diverge < 0) {
        fmt::print(stderr, "usage: long_report OUT.html [--steps N] [--live] [--diverge S]\n");
        return 2;
    }
    try {
        manual_seed(0);
        Mlp model;
        optim::Adam opt(model.parameters(), optim::AdamOptions(1e-3));
        opt.set_check_finite(false);  // --diverge: the NaN reaches the loss, as in torch
        const std::string title = diverge > 0 ? "diverged r\xE9sum\xE9" : fmt::format("long run: {} steps </script><!--", steps);
        RunReport report(argv[1], {.title = title, .write_interval = 1e9});
        report.attach(model);
        const Tensor x = randn({32, 4}, default_generator());
        Ids y = Ids::from_shape({32});
        for (std::size_t i = 0; i < 32; ++i) y(i) = static_cast<std::int64_t>(i % 3);
        for (long step = 1; step <= steps; ++step) {
            report.begin_step(step);
            opt.zero_grad();
            Tensor loss = cross_entropy(model.forward(x), y);
            report.backward(loss);
            report.gradients();
            opt.step();
            report.end_step({{"loss", loss.item()}, {"lr", 1e-3}});
            if (step % 100 == 0) report.log(step, "val_loss", loss.item() * 1.1);
            if (!std::isfinite(loss.item())) {
                report.finish_with_error(fmt::format("loss is {} at step {}", loss.item(), step));
                fmt::print("wrote {} (stopped at step {}: loss {})\n", argv[1], step, loss.item());
                return 0;
            }
            if (step == diverge) model.fc1->weight.mutable_data()(0, 0) = std::nanf("");
        }
        const std::vector<std::string> words{"a", "</script>", "<b>bold</b>", "d", "e", "f"};
        const Tensor scores = softmax(randn({1, 4, 6, 6}, default_generator()), -1);
        report.attention("self-attention", {scores, scores}, words, words);
        if (live) {
            // As a run in progress leaves it: the page says live and reloads itself. Ends here, as if
            // the run were still going: RunReport's destructor would finish the page.
            report.write();
            fmt::print("wrote {} ({} steps, live)\n", argv[1], steps);
            std::fflush(stdout);
            std::_Exit(0);
        }
        report.finish();
        fmt::print("wrote {} ({} steps)\n", argv[1], steps);
        return 0;
    } catch (const std::exception& e) {
        fmt::print(stderr, "long_report: {}\n", e.what());
        return 1;
    }
}
