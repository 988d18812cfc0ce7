// layer_norm_bench: layer norm's row kernels (autograd/ops/layer_norm.hpp) alone, at seed-d's
// shapes (tutorial D: encoder rows 10 · 32, decoder rows 20 · 32, d_model 512): forward, and
// backward writing dx, dweight and dbias, as a training step runs them. Prints min and median
// per call and the time per element.
//
//   build/bench/layer_norm_bench [--reps R] [--threads N]
#include <xtgrad/autograd/ops/layer_norm.hpp>
#include "bench/timing.hpp"
#include "examples/common/cli.hpp"

#include "examples/common/cli11.hpp"
#include <fmt/core.h>

#include <algorithm>
#include <vector>

using namespace xtgrad;
using bench::ms_of;
using bench::randn_buffer;

int run(int reps);

int main(int argc, char** argv) {
    int reps = 200, threads = 1;
    CLI::App app{"Layer norm's forward and backward row kernels at seed-d's shapes.", "layer_norm_bench"};
    app.add_option("--reps", reps, "timed calls of each")->capture_default_str()->transform(cli::count_in(1, 100000));
    cli::add_threads_option(app, threads);
    return cli::run_main(app, argc, argv, [&] {
        cli::apply_threads(threads);
        return run(reps);
    });
}

int run(int reps) {
    constexpr std::size_t d = 512;
    fmt::print("layer norm row kernels, d {}, {} calls each (min / median µs, ns per element at the median)\n", d, reps);
    fmt::print("{:<34} {:>20} {:>20}\n", "rows x d", "forward", "backward (dx, dw, db)");
    for (const std::size_t rows : {std::size_t{320}, std::size_t{640}}) {
        // x, g: (rows, d); w, b: (d); y, dx: (rows, d); mean, rstd: (rows)
        const std::vector<float> x = randn_buffer(rows * d, 1), g = randn_buffer(rows * d, 2), w = randn_buffer(d, 3),
                                 b = randn_buffer(d, 4);
        std::vector<float> y(rows * d), mean(rows), rstd(rows), dx(rows * d), dw(d), db(d);
        std::vector<double> fwd, bwd;
        for (int r = 0; r < reps + 1; ++r) {
            const double f = ms_of([&] {
                layer_norm_forward(x.data(), w.data(), b.data(), y.data(), mean.data(), rstd.data(), rows, d, 1e-5f);
            });
            // a fresh dx (overwritten), dw and db added into, as a step's backward writes them
            const double k = ms_of([&] {
                layer_norm_backward(g.data(), x.data(), w.data(), mean.data(), rstd.data(),
                                    GradOut::overwrite(dx.data(), dx.size()), GradOut::add_into(dw.data(), d),
                                    GradOut::add_into(db.data(), d), rows, d);
            });
            if (r == 0) continue;  // warm-up: first touch of the buffers
            fwd.push_back(f * 1e3);
            bwd.push_back(k * 1e3);
        }
        const auto cell = [&](const std::vector<double>& t) {
            const double med = bench::median(t);
            return fmt::format("{:.1f} / {:.1f} ({:.2f})", *std::min_element(t.begin(), t.end()), med,
                               med * 1e3 / static_cast<double>(rows * d));
        };
        fmt::print("{:<34} {:>20} {:>20}\n", fmt::format("{} x {}", rows, d), cell(fwd), cell(bwd));
    }
    return 0;
}
