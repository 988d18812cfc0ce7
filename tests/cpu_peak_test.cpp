// The core's measured ceilings (simd/cpu_peak.hpp): each probe runs its instructions where the
// CPU has them and says 0 where it does not. No timing is asserted (benchmarks measure speed):
// only that a probe that ran measured something, and that no iterations measure nothing.
#include "tests/test_util.hpp"

#include <xtgrad/simd/cpu_peak.hpp>

using namespace xtgrad;

TEST_SUITE_BEGIN("ops");

TEST_CASE("the FMA and bf16 dot-product probes run where the CPU has the instructions, else give 0") {
    __builtin_cpu_init();
    constexpr long kSteps = 10'000;
    CHECK((fma_peak_avx512_gflops(kSteps) > 0) == static_cast<bool>(__builtin_cpu_supports("avx512f")));
    CHECK((fma_peak_avx2_gflops(kSteps) > 0) ==
          static_cast<bool>(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")));
    CHECK((bf16_dot_peak_gflops(kSteps) > 0) == static_cast<bool>(__builtin_cpu_supports("avx512bf16")));
    CHECK(fma_peak_avx512_gflops(0) == 0);
    CHECK(bf16_dot_peak_gflops(-1) == 0);
}

TEST_SUITE_END();
