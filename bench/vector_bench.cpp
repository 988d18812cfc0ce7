// vector_bench: xtgrad's own vector kernels (simd/vector_kernels.hpp) in each instruction set
// the CPU has (simd/cpu_isa.hpp): softmax's exp over attention-score rows (compute-bound) and
// the Adam update over the Winter Games model's 44 M parameters (memory-bound) and as many updates
// on 8 K parameters kept in L1 (its arithmetic alone: on the Zen 3 the divider's sqrt and
// division, which torch's bits need, take most of it: docs/performance.md). Runs alternate
// between the sets, so a busy machine slows both alike; prints min and median per set.
//
//   build/bench/vector_bench [--reps R]
#include <xtgrad/simd/cpu_isa.hpp>
#include <xtgrad/random/random.hpp>
#include <xtgrad/simd/vector_kernels.hpp>
#include "bench/timing.hpp"
#include "examples/common/cli.hpp"

#include "examples/common/cli11.hpp"
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

using namespace xtgrad;
using bench::ms_of;
using bench::randn_buffer;

int run(int reps);

int main(int argc, char** argv) {
    int reps = 15;
    CLI::App app{"xtgrad's vector kernels, baseline (AVX2) vs AVX-512, on one thread.", "vector_bench"};
    app.add_option("--reps", reps, "timed passes")->capture_default_str()->transform(cli::count_in(1, 100000));
    return cli::run_main(app, argc, argv, [&] { return run(reps); });
}

int run(int reps) {
    std::vector<Isa> isas{Isa::baseline};
    if (avx512_available()) isas.push_back(Isa::avx512);
    // softmax's exp: seed-d's attention scores, (32 batch · 8 heads · 100 queries) rows of 100 keys.
    constexpr std::size_t rows = 32 * 8 * 100, len = 100;
    const std::vector<float> scores = randn_buffer(rows * len, 1);
    std::vector<float> exps(rows * len);
    // Adam: 44.2 M parameters (tutorial C at the lesson's sizes), weights, grads and both moments.
    constexpr std::size_t params = 44'200'000;
    std::vector<float> w = randn_buffer(params, 2), g = randn_buffer(params, 3), m(params, 0.f), v(params, 0.f);
    // the same count of updates on a slice that stays in L1: 4 arrays of 32 KiB (8192 floats)
    constexpr std::size_t slice = 8192, slice_passes = params / slice;
    const vec::AdamCoefficients c{.b1 = 0.9f, .one_minus_b1 = 0.1f, .b2 = 0.999f, .one_minus_b2 = 0.001f, .l2 = 0.f,
                                  .decay = 1.f, .step_size = 1e-3f, .inv_sqrt_bc2 = 1.f, .eps = 1e-8f};

    std::map<std::pair<int, Isa>, std::vector<double>> times;  // (kernel, isa) -> ms per pass
    for (int r = 0; r < reps + 1; ++r)
        for (Isa isa : isas) {
            IsaScope scope(isa);
            const double exp_ms = ms_of([&] {
                for (std::size_t row = 0; row < rows; ++row)
                    vec::exp_shifted_sum(scores.data() + row * len, exps.data() + row * len, len, 0.5f, true);
            });
            const double adam_ms = ms_of([&] { vec::adam_update(c, w.data(), g.data(), m.data(), v.data(), params); });
            const double adam_l1_ms = ms_of([&] {
                for (std::size_t p = 0; p < slice_passes; ++p)
                    vec::adam_update(c, w.data(), g.data(), m.data(), v.data(), slice);
            });
            if (r == 0) continue;  // warm-up: first touch of the buffers
            times[{0, isa}].push_back(exp_ms);
            times[{1, isa}].push_back(adam_ms);
            times[{2, isa}].push_back(adam_l1_ms);
        }

    fmt::print("vector kernels, 1 thread, {} passes each (min / median ms)\n", reps);
    fmt::print("{:<48} {:>18} {:>18} {:>9}\n", "kernel", "baseline", "avx512", "speed-up");
    const std::string names[] = {"exp_shifted_sum, 25600 rows x 100 (softmax)", "adam_update, 44.2 M parameters",
                                 fmt::format("adam_update, {} parameters in L1, {} times", slice, slice_passes)};
    for (int k = 0; k < 3; ++k) {
        std::map<Isa, std::pair<double, double>> mm;
        for (Isa isa : isas) {
            std::vector<double> t = times[{k, isa}];
            std::sort(t.begin(), t.end());
            mm[isa] = {t.front(), t[t.size() / 2]};
        }
        const auto cell = [&](Isa isa) {
            return mm.count(isa) ? fmt::format("{:.2f} / {:.2f}", mm[isa].first, mm[isa].second) : std::string("n/a");
        };
        const std::string ratio =
            mm.count(Isa::avx512) ? fmt::format("{:.2f}x", mm[Isa::baseline].second / mm[Isa::avx512].second) : "-";
        fmt::print("{:<48} {:>18} {:>18} {:>9}\n", names[k], cell(Isa::baseline), cell(Isa::avx512), ratio);
    }
    return 0;
}
