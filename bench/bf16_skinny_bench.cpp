// bf16_skinny_bench: where bf16 products stop paying. A Linear layer's three products
// (y = x·Wᵀ, dx = dy·W, dW = dyᵀ·x) on r rows, fp32 against bf16 (autocast's path: the weight
// converted once per step, autograd/bf16_weights.hpp, the activations per product), over 16
// weights of 2048x512 (64 MiB, beyond any cache, as in a training step). Prints per r the fp32
// time of the three products, the bf16 time of the three plus one conversion of the weight, and
// their ratio; gemm_ld runs a product with a side under detail::bf16_min_side() in fp32, and this
// measures where that default comes from. Passes alternate fp32 / bf16 so a busy machine slows
// both alike; medians.
//
//   build/bench/bf16_skinny_bench [--threads N] [--reps R] [--rows "7 16 32 64"]
#include <xtgrad/autograd/autocast.hpp>
#include <xtgrad/gemm/blas.hpp>
#include "bench/timing.hpp"
#include "examples/common/cli.hpp"

#include "examples/common/cli11.hpp"
#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

using namespace xtgrad;
using bench::median;
using bench::ms_of;

int run(int threads, int reps, const std::vector<int>& rows);

int main(int argc, char** argv) {
    int threads = 1, reps = 9;
    std::vector<int> rows{1, 7, 16, 24, 32, 48, 64, 128, 256};
    CLI::App app{"A Linear layer's products on r rows: fp32 against bf16 (weight converted once), the crossover.",
                 "bf16_skinny_bench"};
    cli::add_threads_option(app, threads);
    app.add_option("--reps", reps, "timed passes")->capture_default_str()->transform(cli::count_in(1, 100000));
    app.add_option("--rows", rows, "row counts")->capture_default_str()->transform(cli::count_in(1, 4096));
    return cli::run_main(app, argc, argv, [&] { return run(threads, reps, rows); });
}

int run(int threads, int reps, const std::vector<int>& rows) {
    cli::apply_threads(threads);
    if (const std::string why = autocast::bf16_unsupported_reason(); !why.empty()) {
        fmt::print(stderr, "bf16_skinny_bench: {}\n", why);
        return cli::kRuntimeError;
    }
    constexpr int ff = 2048, d = 512, count = 16;  // W (ff, d): a feed-forward's first Linear
    const std::size_t wsize = static_cast<std::size_t>(ff) * d;
    const int max_rows = *std::max_element(rows.begin(), rows.end());
    const std::vector<float> W = bench::randn_buffer(count * wsize, 1);
    const std::vector<float> x = bench::randn_buffer(static_cast<std::size_t>(max_rows) * d, 2),
                             dy = bench::randn_buffer(static_cast<std::size_t>(max_rows) * ff, 3);
    std::vector<std::uint16_t> W16(count * wsize);
    std::vector<float> y(static_cast<std::size_t>(max_rows) * ff), dx(static_cast<std::size_t>(max_rows) * d),
        dW(count * wsize);
    const int saved_min_side = detail::bf16_min_side();
    detail::set_bf16_min_side(0);  // measure bf16 on every shape

    fmt::print("{} thread(s); one pass = the 3 products of a Linear (2048, 512) on r rows, over {} weights (64 MiB)\n",
               threads, count);
    fmt::print("{:>5} {:>10} {:>10} {:>10} {:>8}   bf16 parts: convert W / y / dx / dW ms\n", "rows", "fp32 ms",
               "bf16 ms", "bf16/fp32", "fp32 GF/s");
    for (const int r : rows) {
        std::vector<double> t32, t16, conv, fwd, bdx, bdw;
        for (int rep = 0; rep <= reps; ++rep) {  // rep 0 warms up
            const double a = ms_of([&] {
                for (int i = 0; i < count; ++i) {
                    const float* w = W.data() + i * wsize;
                    gemm(DType::fp32, false, true, r, ff, d, 1.f, x.data(), w, 0.f, y.data());      // y (r, ff) = x Wᵀ
                    gemm(DType::fp32, false, false, r, d, ff, 1.f, dy.data(), w, 0.f, dx.data());   // dx (r, d) = dy W
                    gemm(DType::fp32, true, false, ff, d, r, 1.f, dy.data(), x.data(), 0.f, dW.data() + i * wsize);  // dW = dyᵀ x
                }
            });
            double c = 0, f = 0, b = 0, g = 0;
            for (int i = 0; i < count; ++i) {
                const float* w = W.data() + i * wsize;
                std::uint16_t* w16 = W16.data() + i * wsize;
                c += ms_of([&] { convert_to_bf16(w, ff, d, d, w16); });  // once per step (the cache)
                f += ms_of([&] { gemm(DType::bf16, false, true, r, ff, d, 1.f, x.data(), w, w16, 0.f, y.data()); });
                b += ms_of([&] { gemm(DType::bf16, false, false, r, d, ff, 1.f, dy.data(), w, w16, 0.f, dx.data()); });
                g += ms_of([&] { gemm(DType::bf16, true, false, ff, d, r, 1.f, dy.data(), x.data(), 0.f, dW.data() + i * wsize); });
            }
            if (rep == 0) continue;
            t32.push_back(a);
            t16.push_back(c + f + b + g);
            conv.push_back(c);
            fwd.push_back(f);
            bdx.push_back(b);
            bdw.push_back(g);
        }
        const double m32 = median(t32), m16 = median(t16);
        fmt::print("{:>5} {:>10.2f} {:>10.2f} {:>10.2f} {:>8.0f}   {:.2f} / {:.2f} / {:.2f} / {:.2f}\n", r, m32, m16,
                   m16 / m32, 3 * 2.0 * r * ff * d * count / (m32 * 1e6), median(conv), median(fwd), median(bdx),
                   median(bdw));
    }
    detail::set_bf16_min_side(saved_min_side);
    return cli::kSuccess;
}
