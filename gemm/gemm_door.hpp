// What gemm/blas.cpp (fp32 products) and gemm/blas_bf16.cpp (bf16 operands, autocast) share: the
// checks every entry makes, the split of a product over xtgrad's pool, the profile's timing,
// and the fp32 routing a bf16 product falls back to. Internal: only those two include it.
#pragma once

#include <xtgrad/gemm/gemm_backend.hpp>
#include <xtgrad/gemm/gemm_profile.hpp>
#include <xtgrad/threads/parallel.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>

namespace xtgrad::detail {

// A product is split when either its arithmetic or its memory traffic is worth a second core.
// Below ~4 MFLOP (~20 µs on one core) the arithmetic alone does not pay for waking the pool. But
// a skinny product (a Linear layer on a 7-token sentence: 7x512 times 512x512, 3.7 MFLOP) is
// bound by reading its 1 MiB weight from memory (~80 µs), and two cores read it faster than one.
constexpr double kSplitFlops = 4e6;
constexpr double kSplitBytes = 512.0 * 1024;
// Blocks of C's rows or columns handed to a thread are multiples of this (a cache line of floats).
constexpr int kBlock = 16;

// C (M, N) split into row blocks (M >= N) or column blocks over xtgrad's pool, each block one
// single-threaded backend product: product(m, n, a, b, c) with the block's sizes and the start of
// its operands and result. Row block [m0, m1) of C reads rows m0.. of op(A) (row m0 of A, or
// column m0 of Aᵀ); column block [n0, n1) reads columns n0.. of op(B). Each element of C is
// computed by one call as in the unsplit product: K is never split, nothing is summed twice.
// One contiguous share per thread, not smaller pieces taken as threads come free: each call packs
// its part of B again, and B packed once (oneDNN's matmul primitive) measured slower too
// (bench/packed_b_probe; docs/performance.md, "Two threads on the Zen 5").
// T: float, or std::uint16_t for bf16 operands.
template <class T, class Product>
void split_product(bool ta, bool tb, int M, int N, const T* A, int lda, const T* B, int ldb, float* C, int ldc,
                   const Product& product) {
    const bool by_rows = M >= N;
    const int extent = by_rows ? M : N;
    const std::size_t blocks = static_cast<std::size_t>((extent + kBlock - 1) / kBlock);
    parallel_for(blocks, 1, [&](std::size_t b0, std::size_t b1) {
        const int i0 = static_cast<int>(b0) * kBlock, i1 = std::min(extent, static_cast<int>(b1) * kBlock);
        const std::ptrdiff_t i = i0;
        if (by_rows)
            product(i1 - i0, N, ta ? A + i : A + i * lda, B, C + i * ldc);
        else
            product(M, i1 - i0, A, tb ? B + i * ldb : B + i, C + i);
    });
}

// Whether a product is worth splitting over the pool: enough arithmetic or memory traffic,
// and wide enough for two blocks.
inline bool worth_splitting(int M, int N, int K, double operand_bytes) {
    const double flops = 2.0 * M * N * K;
    const double bytes = operand_bytes * (double(M) * K + double(K) * N) + 4.0 * double(M) * N;
    return (flops >= kSplitFlops || bytes >= kSplitBytes) && std::max(M, N) >= 2 * kBlock;
}

// Whether the product goes over xtgrad's pool in blocks (split_product): the backend does not
// thread it itself, both it and the pool have two threads or more, and it is worth it.
inline bool pool_splits(int M, int N, int K, double operand_bytes) {
    const GemmBackend& backend = active_backend();
    return !backend.threads_itself && backend.threads() >= 2 && num_threads() >= 2 &&
           worth_splitting(M, N, K, operand_bytes);
}

// Runs one product, timed into gemm_profile when profiling is on.
template <class Route>
void profiled(bool ta, bool tb, int M, int N, int K, const Route& route) {
    if (!gemm_profiling()) return route();
    const auto t0 = std::chrono::steady_clock::now();
    route();
    record_gemm(ta, tb, M, N, K,
                        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
}

// C = beta · C for an empty inner dimension or alpha = 0, where BLAS reads neither A nor B
// (beta = 0 writes zeros without reading C; oneDNN's alpha = 0 left a NaN of C in place).
void scale_only(int M, int N, float beta, float* C, int ldc);

// The sizes every entry checks before it touches memory: no negative extent, and leading
// dimensions that hold a stored row (A is (M, K), or (K, M) when trans_a; B (K, N) or (N, K); C
// (M, N)). A shorter one made rows overlap, silently; a negative K threw std::length_error.
void check_sizes(const char* who, bool ta, bool tb, int M, int N, int K, int lda, int ldb, int ldc);

// XTGRAD_SMALL_GEMM, read once, on the first product: small and medium products to small_gemm.
bool small_gemm_on();

// gemm_ld's fp32 routing (blas.cpp): small_gemm, the skinny kernels, or the backend.
void route(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
           int ldb, float beta, float* C, int ldc);

}  // namespace xtgrad::detail
