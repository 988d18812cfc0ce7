// Matrix products too small for a library call: the attention core's per-(batch, head) slices
// on short sentences.
//
// Tutorial D's Transformer on its batch of 10-token sources and 20-token targets multiplies, per
// (batch, head) block, q·kᵀ (10 x 10 x 64 ... 20 x 20 x 64), w·v and their backward products:
// 6-26 thousand multiply-adds each, thousands of them per step. A library call has a fixed
// cost of a few µs (oneDNN's dnnl_sgemm checks its arguments, picks and packs; OpenBLAS
// allocates its buffers), more than the arithmetic itself: bench/matmul_primitive_probe measured
// dnnl_sgemm at 3-43 GFLOP/s on these shapes. small_gemm has no set-up: it copies op(B) into a
// row-major (K, N) panel and runs one register-blocked loop.
//
// Same contract as gemm_ld (gemm/blas.hpp): row-major, explicit leading dimensions,
// C = alpha · op(A) · op(B) + beta · C, beta = 0 never reads C. gemm_ld hands it every product
// small_gemm_fits accepts, on every backend, so callers never choose. One thread per call (the
// attention core already runs its blocks on the pool).
#pragma once

namespace xtgrad {

// Products of at most this many multiply-adds (M · N · K) go to small_gemm: 20 x 20 x 64 is 25 600.
// Above it the libraries' packed kernels win (bench/matmul_primitive_probe, docs/performance.md).
inline constexpr long kSmallGemmMacs = 32768;

inline bool small_gemm_fits(int M, int N, int K) {
    return static_cast<long>(M) * N * K <= kSmallGemmMacs;
}

// C (M, N) = alpha · op(A) · op(B) + beta · C for any M, N, K >= 1 (fastest when small_gemm_fits).
void small_gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                const float* B, int ldb, float beta, float* C, int ldc);

}  // namespace xtgrad
