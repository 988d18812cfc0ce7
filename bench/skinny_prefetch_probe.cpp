// skinny_prefetch_probe: how fast can a 7-row product y = x·Wᵀ stream its weight on one core?
// The Winter Games step's products run at 8-18 GB/s (docs/performance.md, "The Winter Games
// step") against the 34-37 GB/s one read stream reaches; this probe shows the difference is
// the access pattern, not the memory. Built with -march=x86-64-v4 (AVX-512) only; a probe, not
// a library kernel (no dispatch, no tails: K a multiple of 16, N of 4).
//
//   build/bench/skinny_prefetch_probe [--reps R]
//
// The kernel: 4 rows of W against the 7 rows of x, 28 zmm accumulators (compute is ~212 GFLOP/s
// with W in L2, so never the limit), one horizontal sum per output. Variants differ only in
// software prefetch: none (the hardware prefetcher alone sees 4 interleaved 2 KiB streams), or
// the tile `ahead` tiles on, walked as the one contiguous region it is (4 rows of W are
// adjacent), a line per row per 16 floats.
#include "bench/timing.hpp"
#include "examples/common/cli.hpp"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <vector>

#if !defined(__AVX512F__)
#error "skinny_prefetch_probe.cpp must be compiled with -march=x86-64-v4 (bench/meson.build does)"
#endif

using xtgrad::bench::median;
using xtgrad::bench::ms_of;

namespace {

constexpr int kRows = 7, kTile = 4;

// y (7, N) = x (7, K) · W (N, K)ᵀ, rows of W n..n+3. Prefetches [pf, pf + 4K) when pf is not null.
void tile(int K, int N, const float* x, const float* W, float* y, int n, const float* pf) {
    __m512 acc[kRows][kTile];
    for (auto& row : acc)
        for (__m512& a : row) a = _mm512_setzero_ps();
    const float* w = W + static_cast<std::size_t>(n) * K;
    for (int k = 0; k < K; k += 16) {
        __m512 b[kTile];
        for (int j = 0; j < kTile; ++j) b[j] = _mm512_loadu_ps(w + static_cast<std::size_t>(j) * K + k);
        if (pf != nullptr)
            for (int j = 0; j < kTile; ++j) _mm_prefetch(reinterpret_cast<const char*>(pf + kTile * k + 16 * j), _MM_HINT_T0);
        for (int i = 0; i < kRows; ++i) {
            const __m512 a = _mm512_loadu_ps(x + i * K + k);
            for (int j = 0; j < kTile; ++j) acc[i][j] = _mm512_fmadd_ps(a, b[j], acc[i][j]);
        }
    }
    for (int i = 0; i < kRows; ++i)
        for (int j = 0; j < kTile; ++j) y[i * N + n + j] = _mm512_reduce_add_ps(acc[i][j]);
}

void product(int K, int N, const float* x, const float* W, float* y, int ahead, const float* end) {
    for (int n = 0; n < N; n += kTile) {
        const float* pf = W + static_cast<std::size_t>(n + ahead * kTile) * K;
        tile(K, N, x, W, y, n, ahead > 0 && pf + kTile * K <= end ? pf : nullptr);
    }
}

int run(int reps) {
    fmt::print("y = x·Wᵀ on 7 rows, 1 thread, AVX-512; each pass: 16 weights (64 MiB), median of {} passes\n", reps);
    fmt::print("{:<22} {:>16} {:>16} {:>16}\n", "W (N, K)", "no prefetch", "1 tile ahead", "2 tiles ahead");
    for (const auto& [N, K] : {std::pair{2048, 512}, std::pair{512, 2048}}) {
        const std::size_t per = static_cast<std::size_t>(N) * K, mats = 16;
        const std::vector<float> W = xtgrad::bench::randn_buffer(per * mats, 1), x = xtgrad::bench::randn_buffer(kRows * K, 2);
        std::vector<float> y(static_cast<std::size_t>(kRows) * N);
        // the products are right: one output against a double sum
        product(K, N, x.data(), W.data(), y.data(), 1, W.data() + per);
        double ref = 0;
        for (int k = 0; k < K; ++k) ref += static_cast<double>(x[static_cast<std::size_t>(3 * K + k)]) * W[static_cast<std::size_t>(5) * K + k];
        if (std::abs(y[static_cast<std::size_t>(3 * N + 5)] - ref) > 1e-3 * (1 + std::abs(ref))) {
            fmt::print(stderr, "skinny_prefetch_probe: y[3][5] = {}, reference {}\n", y[static_cast<std::size_t>(3 * N + 5)], ref);
            return 1;
        }
        std::string cells;
        for (int ahead : {0, 1, 2}) {
            std::vector<double> ms;
            for (int r = 0; r < reps + 1; ++r) {
                const double t = ms_of([&] {
                    for (std::size_t m = 0; m < mats; ++m)
                        product(K, N, x.data(), W.data() + m * per, y.data(), ahead, W.data() + (m + 1) * per);
                });
                if (r > 0) ms.push_back(t);
            }
            const double t = median(ms);
            cells += fmt::format(" {:>16}", fmt::format("{:.2f} ms {:.1f} GB/s", t, mats * per * 4 / (t * 1e6)));
        }
        fmt::print("{:<22}{}\n", fmt::format("({}, {})", N, K), cells);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    int reps = 7;
    CLI::App app{"How fast a 7-row product x·Wᵀ streams its weight on one core, with and without software prefetch.",
                 "skinny_prefetch_probe"};
    app.add_option("--reps", reps, "timed passes")->capture_default_str()->check(CLI::Range(1, 1000));
    return xtgrad::cli::run_main(app, argc, argv, [&] { return run(reps); });
}
