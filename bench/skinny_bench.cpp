// skinny_bench: a Linear layer's three products on a 7-token sentence, the GEMM backend (oneDNN
// or OpenBLAS, as built) against xtgrad's skinny kernels (gemm/skinny_gemm.hpp), as in the Winter Games step: the weights
// of tutorial C's model do not fit any cache, so each product cycles through 64 MiB of weights.
// Runs alternate between the two, so a busy machine slows both alike; prints min and median.
// Then the weight gradients of tutorial C's Linears (K = 7), written fresh to memory and into a
// cached buffer.
//
//   build/bench/skinny_bench [--threads N] [--reps R]
#include <xtgrad/random/random.hpp>
#include <xtgrad/gemm/skinny_gemm.hpp>
#include "bench/timing.hpp"
#include "examples/common/cli.hpp"

#include "examples/common/cli11.hpp"
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

using namespace xtgrad;
using bench::median;

namespace {

using Gemm = void (*)(bool, bool, int, int, int, float, const float*, int, const float*, int, float, float*, int);

struct Shape3 {
    const char* what;
    const char* cached;  // its label with the weight in cache
    bool ta, tb;
    int M, N, K;
};

// The skinny kernels themselves, whatever gemm_ld's routing on this backend.
void skinny(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
            float beta, float* C, int ldc) {
    if (!skinny_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc))
        gemm_backend(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// Times of pass(&gemm_backend) and pass(&skinny), `reps` each, alternating (a busy machine slows
// both alike), after one untimed pass of each.
struct Timings {
    std::vector<double> backend, skinny;
};
template <class Pass>
Timings alternate(const Pass& pass, int reps) {
    Timings t;
    pass(&gemm_backend);
    pass(&skinny);
    for (int r = 0; r < reps; ++r) {
        t.backend.push_back(pass(&gemm_backend));
        t.skinny.push_back(pass(&skinny));
    }
    return t;
}

double minimum(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

}  // namespace

int run(int threads, int reps);

int main(int argc, char** argv) {
    int threads = 1, reps = 15;
    CLI::App app{"7-row products (a Linear layer on a 7-token sentence): the GEMM backend vs xtgrad's skinny kernels.",
                 "skinny_bench"};
    cli::add_threads_option(app, threads);
    app.add_option("--reps", reps, "timed passes over the weights")->capture_default_str()->transform(cli::count_in(1, 100000));
    return cli::run_main(app, argc, argv, [&] { return run(threads, reps); });
}

int run(int threads, int reps) {
    cli::apply_threads(threads);

    constexpr int rows = 7, d = 512, ff = 2048;
    // 64 MiB of weights, in 16 (ff, d) matrices: one pass reads them all from memory.
    constexpr int count = 16;
    Generator gen(0);
    const Array weights = randn({static_cast<std::size_t>(count) * ff * d}, gen).data();
    const Array act = randn({static_cast<std::size_t>(rows) * 2 * ff}, gen).data();  // (7, ff) twice: dyᵀ and x of a dW
    Array out = Array::from_shape({static_cast<std::size_t>(ff) * d});
    // Gradients in xtgrad's own (32-byte aligned) arrays, where dW's rows can be streamed.
    Array grads = Array::from_shape({static_cast<std::size_t>(count) * ff * d});

    // The products of W (ff, d) in a feed-forward's first Linear, x (7, d), dy (7, ff).
    const Shape3 shapes[] = {
        {"forward   y = x·Wᵀ  (7,512)·(2048,512)ᵀ", "forward,  W in cache (L3)", false, true, rows, ff, d},
        {"backward dx = dy·W  (7,2048)·(2048,512)", "dx,       W in cache (L3)", false, false, rows, d, ff},
        {"backward dW = dyᵀ·x (7,2048)ᵀ·(7,512)", "", true, false, ff, d, rows},
    };
    fmt::print("{} thread(s); each time is one pass over {} weight matrices of {}x{} (64 MiB)\n", threads, count, ff, d);
    fmt::print("{:<42} {:>16} {:>16} {:>8}\n", "product", fmt::format("{} ms", gemm_backend_name()), "skinny ms", "ratio");
    {  // The floor: reading the 64 MiB once (a sum), the least any of the products can cost.
        std::vector<double> t;
        volatile float sink = 0;
        for (int r = 0; r <= reps; ++r) {
            const auto t0 = std::chrono::steady_clock::now();
            float acc[8] = {};
            const float* w = weights.data();
            for (std::size_t i = 0; i + 8 <= weights.size(); i += 8)
                for (int j = 0; j < 8; ++j) acc[j] += w[i + j];
            sink = sink + acc[0] + acc[7];
            if (r > 0) t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        fmt::print("{:<42} {:>7.2f} (min {:>5.2f})   read bandwidth {:.1f} GB/s\n", "floor: read the weights once", median(t),
                   minimum(t), 64.0 * 1.048576 / minimum(t));
    }
    // Each product from memory (16 weights in turn), and the forward and dx also with one weight
    // every time, in cache (L3): the kernels' arithmetic rate, which streaming from memory overlaps.
    for (const Shape3& s : shapes)
        for (const bool cached : {false, true}) {
            if (cached && s.ta) continue;
            const auto pass = [&](Gemm gemm) {
                const auto t0 = std::chrono::steady_clock::now();
                for (int i = 0; i < count; ++i) {
                    const float* W = weights.data() + static_cast<std::size_t>(cached ? 0 : i) * ff * d;
                    if (s.ta)  // dW_i = dyᵀ · x, written into its own gradient buffer
                        gemm(true, false, s.M, s.N, s.K, 1.f, act.data(), ff, act.data(), d, 0.f,
                             grads.data() + static_cast<std::size_t>(i) * ff * d, d);
                    else if (s.tb)
                        gemm(false, true, s.M, s.N, s.K, 1.f, act.data(), d, W, d, 0.f, out.data(), s.N);
                    else
                        gemm(false, false, s.M, s.N, s.K, 1.f, act.data(), ff, W, d, 0.f, out.data(), s.N);
                }
                return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            };
            const Timings t = alternate(pass, reps);
            const double mb = median(t.backend), mo = median(t.skinny);
            fmt::print("{:<42} {:>7.2f} (min {:>5.2f}) {:>7.2f} (min {:>5.2f}) {:>8.2f}\n", cached ? s.cached : s.what, mb,
                       minimum(t.backend), mo, minimum(t.skinny), mo / mb);
        }
    // The winter config's weight gradients, dW (M, N) = dyᵀ · x over 7 rows, in the layouts the
    // step calls: a Linear's (TN: dy (7, M), x (7, N)) and a kernel-1 Conv1d's (NT: dy (M, 7),
    // x (N, 7)). Write-bound: 7 multiply-adds per element of
    // dW. "fresh": each product writes its own gradient, cycling through 64 MiB (the gradient goes
    // to memory). "cached": the same gradient buffer every time (it stays in L2/L3: in the step in
    // backward, a gradient often reuses the block the previous parameter's just freed).
    // GB/s = bytes of dW written / time.
    fmt::print("\nweight gradients, K = 7 (ms per product, median of {} x {} products; GB/s of dW written)\n", reps, count);
    fmt::print("{:<34} {:>16} {:>16} {:>8} {:>10} {:>10}\n", "product", fmt::format("{} ms", gemm_backend_name()),
               "skinny ms", "ratio", "GB/s " + std::string(gemm_backend_name()), "GB/s skinny");
    struct DwShape {
        bool linear;  // TN (a Linear's), else NT (a Conv1d's)
        int M, N;
    };
    const DwShape dw_shapes[] = {{true, d, d}, {true, d, ff}, {true, ff, d}, {false, d, ff}, {false, ff, d}};
    for (const DwShape& w : dw_shapes)
        for (const bool cached : {false, true}) {
            const int M = w.M, N = w.N;
            const std::size_t size = static_cast<std::size_t>(M) * N;
            const int buffers = cached ? 1 : static_cast<int>(grads.size() / size);
            const float* dy = act.data();                 // (7, M) or (M, 7)
            const float* x = act.data() + rows * ff;      // (7, N) or (N, 7)
            const auto pass = [&](Gemm gemm) {
                const auto t0 = std::chrono::steady_clock::now();
                for (int i = 0; i < count; ++i) {
                    float* dW = grads.data() + static_cast<std::size_t>(i % buffers) * size;
                    if (w.linear)
                        gemm(true, false, M, N, rows, 1.f, dy, M, x, N, 0.f, dW, N);
                    else
                        gemm(false, true, M, N, rows, 1.f, dy, rows, x, rows, 0.f, dW, N);
                }
                return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / count;
            };
            const Timings t = alternate(pass, reps);
            const double mb = median(t.backend), mo = median(t.skinny), bytes = 4.0 * static_cast<double>(size);
            fmt::print("{:<34} {:>7.3f} (min {:>5.3f}) {:>7.3f} (min {:>5.3f}) {:>8.2f} {:>10.1f} {:>10.1f}\n",
                       fmt::format("dW ({}, {}) {} {}", M, N, w.linear ? "TN" : "NT", cached ? "cached" : "fresh"), mb,
                       minimum(t.backend), mo, minimum(t.skinny), mo / mb, bytes / mb / 1e6, bytes / mo / 1e6);
        }
    return cli::kSuccess;
}
