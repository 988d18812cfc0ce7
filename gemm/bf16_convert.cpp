#include <xtgrad/gemm/bf16_convert.hpp>

#include <xtgrad/gemm/dtype.hpp>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace xtgrad::detail {

namespace {

void bf16_row_plain(const float* src, std::size_t n, std::uint16_t* dst) {
    for (std::size_t i = 0; i < n; ++i) dst[i] = to_bf16_bits(src[i]);  // branch-free: vectorises (AVX2)
}

#if defined(__x86_64__)
// src (n) -> dst (n): 32 floats per step, two 16-float halves rounded by one vcvtne2ps2bf16
// (the second operand goes to the low half); the last < 32 through masked 16-float steps, so
// every element takes the same instruction (the same denormal flush) and nothing past n is read.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void bf16_row_avx512(const float* src, std::size_t n,
                                                                           std::uint16_t* dst) {
    std::size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        const __m512 lo = _mm512_loadu_ps(src + i), hi = _mm512_loadu_ps(src + i + 16);
        _mm512_storeu_si512(dst + i, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo)));
    }
    for (; i < n; i += 16) {
        const std::size_t left = n - i < 16 ? n - i : 16;
        const __mmask16 m = static_cast<__mmask16>((1u << left) - 1u);
        const __m256bh r = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, src + i));
        _mm256_mask_storeu_epi16(dst + i, m, reinterpret_cast<__m256i>(r));
    }
}
#endif

bool detect() {
#if defined(__x86_64__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bf16");
#else
    return false;
#endif
}

}  // namespace

bool bf16_row_uses_avx512_bf16() {
    static const bool has = detect();
    return has;
}

void bf16_row(const float* src, std::size_t n, std::uint16_t* dst) {
#if defined(__x86_64__)
    if (bf16_row_uses_avx512_bf16()) return bf16_row_avx512(src, n, dst);
#endif
    bf16_row_plain(src, n, dst);
}

}  // namespace xtgrad::detail
