// Matrix products with a skinny side, for the products of a Linear layer on a few rows.
//
// A Winter Games sentence is 7 tokens, so every Linear layer's three products are
//   forward  y  = x · Wᵀ      x: (7, K),  W: (N, K)   -> skinny_nt, M = 7
//   backward dx = dy · W      dy: (7, N), W: (N, K)   -> skinny_nn, M = 7
//   backward dW = dyᵀ · x     dy: (7, N), x: (7, K)   -> skinny_tn, inner dimension 7
// OpenBLAS copies ("packs") the whole weight into its panel layout before multiplying, and for
// 7 rows packing costs more than the multiply: it was 37 % of the Winter Games step against
// 27 % in its kernel (docs/performance.md). These kernels read the weight once, straight from
// its buffer, with the few activation rows held in L1; each is a plain loop over xsimd batches.
// On an AVX-512 CPU (simd/cpu_isa.hpp) skinny_nt and skinny_nn run kernels of their own for up
// to 7 rows (gemm/skinny_avx512.cpp), which prefetch the weight ahead and stream it 1.4-1.9x
// faster than oneDNN, and skinny_tn one for K <= 7, which writes the gradient with plain stores
// at up to ~55 GB/s into cache: there gemm_ld sends them the products with at most 7 rows or
// columns, or K <= 7, under oneDNN too.
//
// Same contract as gemm_ld (gemm/blas.hpp): row-major, explicit leading dimensions,
// C = alpha · op(A) · op(B) + beta · C, beta = 0 never reads C. gemm_ld hands skinny products
// to skinny_gemm where it pays (gemm/blas.cpp, route), so callers never choose. The kernels split the long dimension over
// xtgrad's threads (threads/parallel.hpp) when there are several.
#pragma once

namespace xtgrad {

inline constexpr int kSkinnyRows = 16;

// Computes the product and returns true when one of M, N, K is at most kSkinnyRows, else
// returns false (OpenBLAS's turn). Few rows of C: skinny_nt / skinny_nn; few columns (Conv1d's
// W·x on 7 positions): the same kernels on Cᵀ = op(B)ᵀ·op(A)ᵀ; a short K: skinny_tn. A small
// operand in the other layout is transposed into a per-thread scratch buffer first.
bool skinny_gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
                 int ldb, float beta, float* C, int ldc);

// Whether skinny_gemm computes an (M, N, K) product on a skinny_tn kernel with K <= 7 (both other
// sides longer than kSkinnyRows; AVX-512's or AVX2's, as the active instruction set): the sum
// vec::adam_update_product reproduces (simd/vector_kernels.hpp).
bool skinny_tn_kernel_takes(int M, int N, int K);

// C (M, N) = alpha · A (M, K) · B (N, K)ᵀ + beta · C, M <= kSkinnyRows.
void skinny_nt(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
               float* C, int ldc);

// C (M, N) = alpha · A (M, K) · B (K, N) + beta · C, M <= kSkinnyRows.
void skinny_nn(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
               float* C, int ldc);

// C (M, N) = alpha · A (K, M)ᵀ · B (K, N) + beta · C, K <= kSkinnyRows.
void skinny_tn(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
               float* C, int ldc);

}  // namespace xtgrad
