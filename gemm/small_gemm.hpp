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
// small_gemm_takes accepts, on every backend, so callers never choose. Its kernels
// (small_gemm_impl.hpp) run on AVX-512 where simd/cpu_isa.hpp chose it, else on AVX2. One thread per call (the
// attention core already runs its blocks on the pool).
#pragma once

namespace xtgrad {

// Products of at most this many multiply-adds (M · N · K) go to small_gemm: 20 x 20 x 64 is 25 600.
// Above it the libraries' packed kernels win (bench/matmul_primitive_probe, docs/performance.md).
inline constexpr long kSmallGemmMacs = 32768;

inline bool small_gemm_fits(int M, int N, int K) {
    return static_cast<long>(M) * N * K <= kSmallGemmMacs;
}

// On AVX-512, small_gemm also takes medium blocks: tutorial B's 100-token attention slices
// (100 x 100 x 64, 100 x 64 x 100) cost oneDNN's sgemm a few µs of set-up each, as much as the
// product (58-130 GFLOP/s in seed-b's profile); with 32 registers the outer-product tile is
// 6 x 64 and runs near the FMA peak while op(B)'s panel (K x N) stays in L2.
inline constexpr long kMediumGemmMacs = 1L << 21;  // 128 x 128 x 128
inline constexpr int kMediumGemmMaxSide = 256;     // N and K: the panel stays in L2
inline constexpr int kMediumGemmMinSide = 8;       // M, N: skinny products have their own kernels

// The products gemm_ld hands to small_gemm: small_gemm_fits, and the medium blocks above where
// the AVX-512 kernels run (simd/cpu_isa.hpp).
bool small_gemm_takes(int M, int N, int K);

// C (M, N) = alpha · op(A) · op(B) + beta · C for any M, N, K >= 1 (fastest when small_gemm_takes).
void small_gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                const float* B, int ldb, float beta, float* C, int ldc);

// The same product with op(A) and op(B) rounded to bf16 (to nearest, ties to even) and the
// products summed in fp32, as gemm_ld(DType::bf16, ...) defines it; for the shapes
// small_gemm_takes, where small_gemm_bf16_available() (else Error). gemm_ld(DType::bf16) hands it
// the medium ones where it pays (detail::medium_blocks_in_bf16, gemm/blas.hpp), so autocast's
// attention blocks need no oneDNN set-up per block. Its kernels (gemm/small_gemm_bf16.cpp:
// vdpbf16ps; gemm/small_gemm_amx.cpp: AMX's tiles, below) read a denormal operand as 0 and flush a
// denormal sum to 0, as the bf16 conversions on these CPUs do (gemm/bf16_convert.hpp). A negative
// size or a leading dimension shorter than its stored row is an Error naming them, C untouched.
void small_gemm_bf16(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                     const float* B, int ldb, float beta, float* C, int ldc);

// True where small_gemm_bf16 can run: the build has the kernel, the CPU has AVX512-BF16 and
// simd/cpu_isa.hpp chose AVX-512 (XTGRAD_ISA=baseline turns it off with the other AVX-512 kernels).
bool small_gemm_bf16_available();

// True where small_gemm_bf16 can run on AMX tiles (gemm/small_gemm_amx.cpp): small_gemm_bf16_available,
// the build has the AMX kernel and simd/amx.hpp found the tiles permitted. It runs there while
// XTGRAD_SMALL_GEMM_AMX is on (its default here), else on vdpbf16ps; the same rounding either way,
// the sums in another order.
bool small_gemm_amx_available();

namespace detail {
// small_gemm_bf16's kernels: vdpbf16ps (gemm/small_gemm_bf16.cpp) and AMX (gemm/small_gemm_amx.cpp).
void small_gemm_bf16_avx512(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                            const float* B, int ldb, float beta, float* C, int ldc);
void small_gemm_bf16_amx(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                         const float* B, int ldb, float beta, float* C, int ldc);

// small_gemm's AVX-512 build (gemm/small_gemm_avx512.cpp); `dots`: dot-product tiles for A · Bᵀ.
void small_gemm_avx512(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                       const float* B, int ldb, float beta, float* C, int ldc, bool dots);
}  // namespace detail

}  // namespace xtgrad
