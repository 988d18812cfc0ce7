// skinny_nt's AVX-512 kernel (gemm/skinny_avx512.cpp, compiled with -march=x86-64-v4).
// Internal: skinny_nt calls it when simd/cpu_isa.hpp chose AVX-512.
#pragma once

namespace xtgrad::detail {

// C[:, n0:n1) (M, n1 - n0) = alpha · A (M, K) · B[n0:n1) (n1 - n0, K)ᵀ + beta · C, for M <= 7;
// B has N rows (its prefetch stays inside them); beta = 0 never reads C.
void skinny_nt_columns_avx512(int M, int n0, int n1, int N, int K, float alpha, const float* A, int lda, const float* B,
                              int ldb, float beta, float* C, int ldc);

// C[:, n0:n1) (M, n1 - n0) = alpha · A (M, K) · B[:, n0:n1) (K, n1 - n0) + beta · C, for M <= 7;
// beta = 0 never reads C.
void skinny_nn_columns_avx512(int M, int n0, int n1, int K, float alpha, const float* A, int lda, const float* B,
                              int ldb, float beta, float* C, int ldc);

}  // namespace xtgrad::detail
