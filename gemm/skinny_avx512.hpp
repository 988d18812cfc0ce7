// skinny_nt's, skinny_nn's and skinny_tn's AVX-512 kernels (gemm/skinny_avx512.cpp, compiled
// with -march=x86-64-v4). Internal: skinny_gemm.cpp calls them when simd/cpu_isa.hpp chose AVX-512.
#pragma once

#include <xtgrad/autograd/array_allocator.hpp>

#include <cstddef>
#include <vector>

namespace xtgrad::detail {

// A scratch operand of the skinny kernels on 64-byte lines, as every Array's, so that their zmm
// loads of its rows never straddle two lines. In std::vector<float> (glibc: 16-byte aligned) the
// Conv1d's transposed x, the A of the feed-forward's products through Cᵀ (2/3 of the Winter Games'
// weight bytes), sat 32 bytes off a line, and skinny_nt's 7 loads of A per 4 of B each touched two:
// its 7-row forward over 64 MiB of weights took 3.0-3.8 ms against 2.1 aligned (one thread, Zen 5).
// The Winter Games step in backward, 1 thread, 7 alternating rounds (bench/compare_builds.sh):
// forward 11.1 -> 9.8 ms, step 41.3 -> 39.6.
using AlignedScratch = std::vector<float, ArrayAllocator<float>>;

// Where skinny_nt's and skinny_nn's software prefetches bring the weight ahead of its use: L1
// (_MM_HINT_T0) or L2 (_MM_HINT_T1). skinny_gemm.cpp's skinny_prefetch() picks it by CPU.
enum class SkinnyPrefetch { l1, l2 };

// C[:, n0:n1) (M, n1 - n0) = alpha · A (M, K) · B[n0:n1) (n1 - n0, K)ᵀ + beta · C, for M <= 7;
// B has N rows (its prefetch stays inside them); beta = 0 never reads C.
void skinny_nt_columns_avx512(int M, int n0, int n1, int N, int K, float alpha, const float* A, int lda, const float* B,
                              int ldb, float beta, float* C, int ldc, SkinnyPrefetch prefetch);

// C[:, n0:n1) (M, n1 - n0) = alpha · A (M, K) · B[:, n0:n1) (K, n1 - n0) + beta · C, for M <= 7;
// beta = 0 never reads C.
void skinny_nn_columns_avx512(int M, int n0, int n1, int K, float alpha, const float* A, int lda, const float* B,
                              int ldb, float beta, float* C, int ldc, SkinnyPrefetch prefetch);

// Rows [m0, m1) of C (M, N) = alpha · op(A) (M, K) · op(B) (K, N) + beta · C, for 1 <= K <= 7,
// any layout through strides: op(A)[m][k] = A[m·sam + k·sak], op(B)[k][n] = B[k·sbk + n·sbn]
// (a weight gradient's dyᵀ: sam = 1, sak = lda; a Conv1d's xᵀ: sbk = 1, sbn = ldb); beta = 0
// never reads C. stream (beta = 0 only): streamed stores, past the caches, else plain stores.
void skinny_tn_rows_avx512(int m0, int m1, int N, int K, float alpha, const float* A, std::ptrdiff_t sam,
                           std::ptrdiff_t sak, const float* B, std::ptrdiff_t sbk, std::ptrdiff_t sbn, float beta,
                           float* C, int ldc, bool stream);

}  // namespace xtgrad::detail
