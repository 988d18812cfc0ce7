// bandwidth_bench: this machine's memory rate on one thread, STREAM-like, over buffers the size
// of the Winter Games model (44.2 M floats, 177 MB each: far beyond the L3), to turn the
// winter step's bytes into a floor (docs/performance.md, "The Winter Games step").
//
//   build/bench/bandwidth_bench [--reps R] [--floats N]
//
// Kernels, each a pass over N floats per buffer (bytes counted as the program asks for them,
// not the write-allocate reads a store miss adds, which STREAM does not count either):
//   read   s += a[i]                         4 B / element
//   write  a[i] = x                          4 B
//   copy   b[i] = a[i]                       8 B
//   triad  c[i] = a[i] + x·b[i]              12 B
//   adam   the optimizer's update (w, g, m, v read; w, m, v written), 28 B: vec::adam_update,
//          plain and prefetching 2 KiB ahead (what Adam::step_parameter asks for on one thread)
#include <xtgrad/simd/vector_kernels.hpp>
#include "bench/timing.hpp"
#include "examples/common/cli.hpp"

#include "examples/common/cli11.hpp"
#include <fmt/core.h>

#include <algorithm>
#include <functional>
#include <vector>

using namespace xtgrad;
using bench::median;
using bench::ms_of;

namespace {

// 16 independent partial sums: a vector of loads per iteration, no dependent float chain.
float read_sum(const float* a, std::size_t n) {
    float acc[16] = {};
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (std::size_t j = 0; j < 16; ++j) acc[j] += a[i + j];
    for (; i < n; ++i) acc[0] += a[i];
    float s = 0;
    for (float x : acc) s += x;
    return s;
}

int run(int reps, std::size_t n) {
    std::vector<float> a(n, 1.f), b(n, 2.f), c(n, 0.f), d(n, 0.f);
    const vec::AdamCoefficients k{.b1 = 0.9f, .one_minus_b1 = 0.1f, .b2 = 0.999f, .one_minus_b2 = 0.001f, .l2 = 0.f,
                                  .decay = 1.f, .step_size = 1e-9f, .inv_sqrt_bc2 = 1.f, .eps = 1e-8f};
    struct Kernel {
        const char* name;
        double bytes_per_element;
        std::function<void()> f;
    };
    volatile float sink = 0;
    float x = 0.5f;
    const std::vector<Kernel> kernels{
        {"read  s += a[i]", 4, [&] { sink = read_sum(a.data(), n); }},
        {"write a[i] = x", 4, [&] { std::fill(c.begin(), c.end(), x += 1.f); }},
        {"copy  b[i] = a[i]", 8, [&] { std::copy(a.begin(), a.end(), d.begin()); }},
        {"triad c[i] = a[i] + x b[i]", 12,
         [&] {
             const float s = x;
             for (std::size_t i = 0; i < n; ++i) c[i] = a[i] + s * b[i];
         }},
        {"adam  w, g, m, v -> w, m, v", 28, [&] { vec::adam_update(k, a.data(), b.data(), c.data(), d.data(), n); }},
        {"adam, prefetching 2 KiB ahead", 28,
         [&] { vec::adam_update(k, a.data(), b.data(), c.data(), d.data(), n, vec::kAdamPrefetchBytes); }},
    };
    std::vector<std::vector<double>> ms(kernels.size());
    for (int r = 0; r < reps + 1; ++r)  // round-robin, so a busier machine slows every kernel alike
        for (std::size_t i = 0; i < kernels.size(); ++i) {
            const double t = ms_of(kernels[i].f);
            if (r > 0) ms[i].push_back(t);  // the first pass touches the pages
        }
    fmt::print("memory rate, 1 thread, {} floats per buffer ({:.0f} MB), {} passes (median)\n", n, n * 4 / 1e6, reps);
    fmt::print("{:<30} {:>10} {:>10}\n", "kernel", "ms", "GB/s");
    for (std::size_t i = 0; i < kernels.size(); ++i) {
        const double t = median(ms[i]);
        fmt::print("{:<30} {:>10.2f} {:>10.1f}\n", kernels[i].name, t, kernels[i].bytes_per_element * n / (t * 1e6));
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    int reps = 9;
    std::size_t n = 44'200'000;
    CLI::App app{"The memory rate on one thread (STREAM-like) over buffers the Winter Games model's size.",
                 "bandwidth_bench"};
    app.add_option("--reps", reps, "timed passes per kernel")->capture_default_str()->transform(cli::count_in(1, 1000));
    app.add_option("--floats", n, "floats per buffer")->capture_default_str()
        ->transform(cli::count_in(1024, 1 << 30));
    return cli::run_main(app, argc, argv, [&] { return run(reps, n); });
}
