// small_gemm's kernels for AVX-512 (gemm/small_gemm_impl.hpp). meson compiles this file with
// -march=x86-64-v4; small_gemm.cpp calls it only when simd/cpu_isa.hpp chose AVX-512.
#include <xtgrad/gemm/small_gemm.hpp>
#include <xtgrad/gemm/small_gemm_impl.hpp>

#if !defined(__AVX512F__) || !defined(__AVX512BW__)
#error "small_gemm_avx512.cpp must be compiled with -march=x86-64-v4 (meson does)"
#endif

namespace xtgrad::detail {

void small_gemm_avx512(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                       const float* B, int ldb, float beta, float* C, int ldc, bool dots) {
    small::Kernels<xsimd::avx512bw>::run(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, dots);
}

}  // namespace xtgrad::detail
