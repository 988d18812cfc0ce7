#include <xtgrad/simd/cpu_peak.hpp>

#include <chrono>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace xtgrad {

#if defined(__x86_64__)
namespace {

constexpr int kChains = 12;

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

volatile float g_sink;  // the sums go here, so the loops stay

// Each loop: `iterations` steps of one instruction per chain; returns instructions per second.
// (Three plain loops: a template over the intrinsics would be compiled without the target's ISA.)
__attribute__((target("avx512f"))) double fma_avx512(long iterations) {
    const __m512 b = _mm512_set1_ps(1.0000001f), c = _mm512_set1_ps(1e-7f);
    __m512 acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
    const auto t0 = std::chrono::steady_clock::now();
    for (long n = 0; n < iterations; ++n)
#pragma GCC unroll 12
        for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], b, c);
    const double t = seconds_since(t0);
    for (int i = 1; i < kChains; ++i) acc[0] = _mm512_add_ps(acc[0], acc[i]);
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, acc[0]);
    g_sink = lanes[0];
    return static_cast<double>(iterations) * kChains / t;
}

__attribute__((target("avx2,fma"))) double fma_avx2(long iterations) {
    const __m256 b = _mm256_set1_ps(1.0000001f), c = _mm256_set1_ps(1e-7f);
    __m256 acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
    const auto t0 = std::chrono::steady_clock::now();
    for (long n = 0; n < iterations; ++n)
#pragma GCC unroll 12
        for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], b, c);
    const double t = seconds_since(t0);
    for (int i = 1; i < kChains; ++i) acc[0] = _mm256_add_ps(acc[0], acc[i]);
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, acc[0]);
    g_sink = lanes[0];
    return static_cast<double>(iterations) * kChains / t;
}

// vdpbf16ps: per fp32 lane, two bf16 products added to the accumulator
__attribute__((target("avx512f,avx512bf16"))) double bf16_dot(long iterations) {
    const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), b = (__m512bh)_mm512_set1_epi16(0x3380);  // 1, ~6e-8
    __m512 acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
    const auto t0 = std::chrono::steady_clock::now();
    for (long n = 0; n < iterations; ++n)
#pragma GCC unroll 12
        for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
    const double t = seconds_since(t0);
    for (int i = 1; i < kChains; ++i) acc[0] = _mm512_add_ps(acc[0], acc[i]);
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, acc[0]);
    g_sink = lanes[0];
    return static_cast<double>(iterations) * kChains / t;
}

}  // namespace
#endif

double fma_peak_avx512_gflops(long iterations) {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (iterations > 0 && __builtin_cpu_supports("avx512f")) return fma_avx512(iterations) * 16 * 2 / 1e9;
#endif
    (void)iterations;
    return 0;
}

double fma_peak_avx2_gflops(long iterations) {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (iterations > 0 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return fma_avx2(iterations) * 8 * 2 / 1e9;
#endif
    (void)iterations;
    return 0;
}

double bf16_dot_peak_gflops(long iterations) {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (iterations > 0 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16"))
        return bf16_dot(iterations) * 16 * 4 / 1e9;
#endif
    (void)iterations;
    return 0;
}

}  // namespace xtgrad
