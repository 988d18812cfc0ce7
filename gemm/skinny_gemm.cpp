// Skinny products (see skinny_gemm.hpp for why they exist). Notation: L = floats per SIMD
// batch (8 with AVX2); "row of W" is a row of the big operand, which is streamed once.
#include <xtgrad/gemm/skinny_gemm.hpp>

#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/threads/parallel.hpp>

#include <xtgrad/gemm/simd_batch.hpp>
#include <xtgrad/gemm/skinny_avx512.hpp>
#include <xtgrad/autograd/speed_switches.hpp>
#include <xtgrad/simd/cpu_isa.hpp>
#include <xtgrad/simd/vector_kernels.hpp>
#include "xtgrad_simd_config.hpp"

#include <xsimd/xsimd.hpp>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

namespace xtgrad {
namespace {

using simd::Batch;
using simd::L;

// Below this many multiply-adds a product is not worth waking a second thread for.
constexpr long kParallelWork = 1L << 18;

// Runs fn(begin, end) over [0, n), split over xtgrad's threads when the product is big enough.
template <class Fn>
void split(int n, long work, std::size_t grain, Fn&& fn) {
    if (work < kParallelWork || num_threads() == 1) {
        fn(0, n);
        return;
    }
    parallel_for(static_cast<std::size_t>(n), grain,
                 [&](std::size_t b, std::size_t e) { fn(static_cast<int>(b), static_cast<int>(e)); });
}

// C = alpha · value + beta · C, without reading C when beta = 0 (it may be uninitialised).
inline float blend(float value, float alpha, float beta, float c) { return beta == 0.f ? alpha * value : alpha * value + beta * c; }

// ---- skinny_nt: C (M, N) = alpha · A (M, K) · B (N, K)ᵀ + beta · C -------------------------
// One tile: MB rows of A (MB <= 7) against NB = 2 rows of B, K-long dot products. 14
// accumulators + one row of B at a time take 15 of AVX2's 16 registers; A's rows are FMA memory
// operands from L1. With both rows of B loaded first, GCC kept an accumulator on the stack, a
// store and a load in its chain every step (Zen 3, W in cache: 5.4 ms per 64 MiB, now 3.9).
// Each step also prefetches B kPrefetchFloats (8 KiB) ahead: the hardware prefetcher alone left
// the kernel ~40 % slower from memory (bench/skinny_bench.cpp), and 2 KiB ahead of a 512-float
// row is the next row, which the tile already reads (Zen 3: 1.05-1.8x the time of 8 KiB, median
// 1.47, 11 pairs; 16 and 32 KiB: as 8).
constexpr int kNtMaxRows = 7;

// Block b's height when M rows, m of them already taken, are cut into `blocks` blocks of equal
// height (M = 7: one block; 8: 4 + 4; 16: 6 + 5 + 5).
inline int block_height(int M, int m, int blocks, int b) { return (M - m) / (blocks - b) + ((M - m) % (blocks - b) != 0); }
constexpr int kPrefetchFloats = 2048;  // 8 KiB: four 512-float rows on (skinny_nt, above)

// A hint to load the line `ahead` floats past p. Never faults, even past the end of the
// buffer; the address is computed as an integer, so no out-of-range pointer is formed.
inline void prefetch(const float* p, int ahead) {
    __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(p) + sizeof(float) * static_cast<std::size_t>(ahead)));
}

template <int MB, int NB>
void nt_tile(int K, const float* A, int lda, const float* B, int ldb, float (&dot)[MB][NB]) {
    Batch acc[MB][NB];
    for (int i = 0; i < MB; ++i)
        for (int j = 0; j < NB; ++j) acc[i][j] = Batch(0.f);
    int k = 0;
    for (; k + L <= K; k += L)
        for (int j = 0; j < NB; ++j) {  // one row of B live at a time: 14 accumulators + 1, no spill
            const Batch b = Batch::load_unaligned(B + j * ldb + k);
            prefetch(B + j * ldb + k, kPrefetchFloats);
            for (int i = 0; i < MB; ++i) acc[i][j] = xsimd::fma(Batch::load_unaligned(A + i * lda + k), b, acc[i][j]);
        }
    for (int i = 0; i < MB; ++i)
        for (int j = 0; j < NB; ++j) {
            float s = xsimd::hadd(acc[i][j]);
            for (int kk = k; kk < K; ++kk) s += A[i * lda + kk] * B[j * ldb + kk];
            dot[i][j] = s;
        }
}

template <int MB, int NB>
void nt_tile_store(int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc) {
    float dot[MB][NB];
    nt_tile<MB, NB>(K, A, lda, B, ldb, dot);
    for (int i = 0; i < MB; ++i)
        for (int j = 0; j < NB; ++j) C[i * ldc + j] = blend(dot[i][j], alpha, beta, C[i * ldc + j]);
}

// mb (<= kNtMaxRows) rows of A against NB rows of B.
template <int NB>
void nt_rows(int mb, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc) {
    switch (mb) {
        case 7: return nt_tile_store<7, NB>(K, alpha, A, lda, B, ldb, beta, C, ldc);
        case 6: return nt_tile_store<6, NB>(K, alpha, A, lda, B, ldb, beta, C, ldc);
        case 5: return nt_tile_store<5, NB>(K, alpha, A, lda, B, ldb, beta, C, ldc);
        case 4: return nt_tile_store<4, NB>(K, alpha, A, lda, B, ldb, beta, C, ldc);
        case 3: return nt_tile_store<3, NB>(K, alpha, A, lda, B, ldb, beta, C, ldc);
        case 2: return nt_tile_store<2, NB>(K, alpha, A, lda, B, ldb, beta, C, ldc);
        default: return nt_tile_store<1, NB>(K, alpha, A, lda, B, ldb, beta, C, ldc);
    }
}

// ---- skinny_nn: C (M, N) = alpha · A (M, K) · B (K, N) + beta · C ---------------------------
// Streams B's rows R = 8 at a time; the M rows of C's column block [n0, n1) stay in L1 and get
// R multiply-adds per load and store. Columns are blocked so those rows fit L1 for any N
// (512 columns of 7 rows: 14 KiB). 8 rows per pass measured ~10 % faster than 4.
constexpr int kNnColumnBlock = 512;
constexpr int kNnRows = 8;

// C[:, n0:n1] += sum over r < R of a[r] · B[r][n0:n1]  (one row of C, R rows of B)
template <int R>
void nn_axpys(const float (&a)[R], const float* const (&b)[R], float* c, int n0, int n1) {
    Batch av[R];
    for (int r = 0; r < R; ++r) av[r] = Batch(a[r]);
    int n = n0;
    for (; n + L <= n1; n += L) {
        Batch acc = Batch::load_unaligned(c + n);
        for (int r = 0; r < R; ++r) acc = xsimd::fma(av[r], Batch::load_unaligned(b[r] + n), acc);
        acc.store_unaligned(c + n);
    }
    for (; n < n1; ++n)
        for (int r = 0; r < R; ++r) c[n] += a[r] * b[r][n];
}

template <int R>
void nn_rows_of_b(int M, int k, int n0, int n1, float alpha, const float* A, int lda, const float* B, int ldb, float* C, int ldc) {
    const float* b[R];
    for (int r = 0; r < R; ++r) b[r] = B + static_cast<std::ptrdiff_t>(k + r) * ldb;
    for (int m = 0; m < M; ++m) {
        float a[R];
        for (int r = 0; r < R; ++r) a[r] = alpha * A[static_cast<std::ptrdiff_t>(m) * lda + k + r];
        nn_axpys<R>(a, b, C + static_cast<std::ptrdiff_t>(m) * ldc, n0, n1);
    }
}

void nn_block(int M, int n0, int n1, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
              float* C, int ldc) {
    for (int m = 0; m < M; ++m) {
        float* c = C + static_cast<std::ptrdiff_t>(m) * ldc;
        for (int n = n0; n < n1; ++n) c[n] = beta == 0.f ? 0.f : beta * c[n];
    }
    int k = 0;
    for (; k + kNnRows <= K; k += kNnRows) nn_rows_of_b<kNnRows>(M, k, n0, n1, alpha, A, lda, B, ldb, C, ldc);
    for (; k < K; ++k) nn_rows_of_b<1>(M, k, n0, n1, alpha, A, lda, B, ldb, C, ldc);
}

// ---- skinny_tn: C (M, N) = alpha · A (K, M)ᵀ · B (K, N) + beta · C, K small ----------------
// Row m of C is a combination of B's K rows with coefficients alpha · A[:, m]: K multiply-adds
// per store, B's rows in L1 (column-blocked), C written once. K is a template parameter so the
// K coefficients live in registers.
//
// A fresh weight gradient (beta = 0) is a big write nobody reads soon (Adam, after the whole
// backward), so it goes out with non-temporal stores: a plain store first reads the line it
// writes. 64 MiB of dW: 3.1 ms streamed, 7.1 plain (OpenBLAS: 7.0). Not where the optimizer's
// step in backward reads it at once (ResultReadAtOnce, gemm/blas.hpp): from cache then. The
// AVX-512 kernel (tn_on_avx512, gemm/skinny_avx512.cpp) makes the same choice where
// XTGRAD_SKINNY_STREAMED_GRADIENT is on.
constexpr int kTnColumnBlock = 512;
constexpr long kStreamFloats = 1L << 18;  // stream C from 1 MiB up

bool stream_result(int M, int N, float beta) {
    return beta == 0.f && static_cast<long>(M) * N >= kStreamFloats && !detail::result_read_at_once();
}

inline void store(const Batch& v, float* p, bool stream) {
#if defined(__AVX__)
    if (stream && reinterpret_cast<std::uintptr_t>(p) % 32 == 0) return _mm256_stream_ps(p, v);
#endif
    (void)stream;
    v.store_unaligned(p);
}

template <int K>
void tn_rows(int m0, int m1, int N, float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C,
             int ldc, bool stream) {
    for (int c0 = 0; c0 < N; c0 += kTnColumnBlock) {
        const int c1 = std::min(N, c0 + kTnColumnBlock);
        for (int m = m0; m < m1; ++m) {
            std::array<float, K> s;
            std::array<Batch, K> a;
            for (int k = 0; k < K; ++k) {
                s[k] = alpha * A[static_cast<std::ptrdiff_t>(k) * lda + m];
                a[k] = Batch(s[k]);
            }
            float* c = C + static_cast<std::ptrdiff_t>(m) * ldc;
            // C[m][n] for the row's ends, summed as the vector lanes are (each multiply-add rounded once)
            const auto one = [&](int n) {
                float acc = beta == 0.f ? s[0] * B[n] : std::fma(s[0], B[n], beta * c[n]);
                for (int k = 1; k < K; ++k) acc = std::fma(s[k], B[static_cast<std::ptrdiff_t>(k) * ldb + n], acc);
                c[n] = acc;
            };
            int n = c0;
            if (stream)  // streamed stores need 32-byte alignment: do the row's first few alone
                for (; n < c1 && reinterpret_cast<std::uintptr_t>(c + n) % 32 != 0; ++n) one(n);
            for (; n + L <= c1; n += L) {
                // k = 0's product, then a multiply-add per k in k order: the sum vec::adam_update_product
                // makes from the factors (a product, not fma(a, b, +0), which turns a -0 into +0)
                Batch acc = beta == 0.f ? a[0] * Batch::load_unaligned(B + n)
                                        : xsimd::fma(a[0], Batch::load_unaligned(B + n), Batch(beta) * Batch::load_unaligned(c + n));
                for (int k = 1; k < K; ++k) acc = xsimd::fma(a[k], Batch::load_unaligned(B + static_cast<std::ptrdiff_t>(k) * ldb + n), acc);
                store(acc, c + n, stream);
            }
            for (; n < c1; ++n) one(n);
        }
    }
}

using TnRows = void (*)(int, int, int, float, const float*, int, const float*, int, float, float*, int, bool);
template <int... Ks>
constexpr std::array<TnRows, sizeof...(Ks)> tn_table(std::integer_sequence<int, Ks...>) {
    return {&tn_rows<Ks + 1>...};  // tn_table[K - 1] handles inner dimension K
}
constexpr auto kTnRows = tn_table(std::make_integer_sequence<int, kSkinnyRows>{});

#if XTGRAD_HAVE_AVX512_KERNELS
// Where the AVX-512 kernels prefetch the weight (skinny_avx512.cpp): XTGRAD_SKINNY_PREFETCH_L2,
// unset the CPU's default (speed_switches.cpp: L2 on the Zen 4, L1 elsewhere). Read at each
// skinny product; an invalid value is an Error there, before anything is written.
detail::SkinnyPrefetch skinny_prefetch() {
    return detail::speed_switch_on(detail::kSkinnyPrefetchL2Switch) ? detail::SkinnyPrefetch::l2 : detail::SkinnyPrefetch::l1;
}
#endif

bool tn_kernel_available(int K) {
#if XTGRAD_HAVE_AVX512_KERNELS
    return active_isa() == Isa::avx512 && K >= 1 && K <= kNtMaxRows;
#else
    (void)K;
    return false;
#endif
}

// On AVX-512 with K <= 7: skinny_tn's own kernel, on op(A) and op(B) in their stored layouts
// (no transposed copies), C's rows split over threads; a big fresh C streamed where
// XTGRAD_SKINNY_STREAMED_GRADIENT is on (by CPU, speed_switches.cpp), else plain stores
// (skinny_avx512.cpp says why). Returns false elsewhere.
bool tn_on_avx512(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                  float beta, float* C, int ldc) {
#if XTGRAD_HAVE_AVX512_KERNELS
    if (!tn_kernel_available(K)) return false;
    // op(A)[m][k] = A[m·sam + k·sak], op(B)[k][n] = B[k·sbk + n·sbn]
    const std::ptrdiff_t sam = ta ? 1 : lda, sak = ta ? lda : 1, sbk = tb ? 1 : ldb, sbn = tb ? ldb : 1;
    // decided here, on the caller's thread, whose ResultReadAtOnce scope it is
    const bool stream = detail::skinny_streamed_gradient() && stream_result(M, N, beta);
    split(M, static_cast<long>(M) * N * K, 32, [&](int m0, int m1) {
        detail::skinny_tn_rows_avx512(m0, m1, N, K, alpha, A, sam, sak, B, sbk, sbn, beta, C, ldc, stream);
    });
    return true;
#else
    (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)B, (void)ldb, (void)beta,
        (void)C, (void)ldc;
    return false;
#endif
}

void scale(int M, int N, float beta, float* C, int ldc) {  // C = beta · C (a product with K = 0)
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
            float& c = C[static_cast<std::ptrdiff_t>(m) * ldc + n];
            c = beta == 0.f ? 0.f : beta * c;
        }
}

}  // namespace

void skinny_nt(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C,
               int ldc) {
    if (K == 0) return scale(M, N, beta, C, ldc);
    // Columns of C = rows of B, split over threads; each pair of B's rows meets all of A's rows,
    // in blocks of equal height (block_height).
    const int blocks = (M + kNtMaxRows - 1) / kNtMaxRows;
#if XTGRAD_HAVE_AVX512_KERNELS
    if (active_isa() == Isa::avx512) {
        const detail::SkinnyPrefetch prefetch = skinny_prefetch();
        return split(N, static_cast<long>(M) * N * K, 32, [&](int n0, int n1) {
            for (int b = 0, m = 0; b < blocks; ++b) {
                const int mb = block_height(M, m, blocks, b);
                detail::skinny_nt_columns_avx512(mb, n0, n1, N, K, alpha, A + static_cast<std::ptrdiff_t>(m) * lda, lda, B,
                                                 ldb, beta, C + static_cast<std::ptrdiff_t>(m) * ldc, ldc, prefetch);
                m += mb;
            }
        });
    }
#endif
    split(N, static_cast<long>(M) * N * K, 32, [&](int n0, int n1) {
        const auto columns = [&](auto nb, int n) {
            for (int b = 0, m = 0; b < blocks; ++b) {
                const int mb = block_height(M, m, blocks, b);
                nt_rows<decltype(nb)::value>(mb, K, alpha, A + static_cast<std::ptrdiff_t>(m) * lda, lda,
                                             B + static_cast<std::ptrdiff_t>(n) * ldb, ldb, beta,
                                             C + static_cast<std::ptrdiff_t>(m) * ldc + n, ldc);
                m += mb;
            }
        };
        int n = n0;
        for (; n + 2 <= n1; n += 2) columns(std::integral_constant<int, 2>{}, n);
        if (n < n1) columns(std::integral_constant<int, 1>{}, n);
    });
}

void skinny_nn(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C,
               int ldc) {
#if XTGRAD_HAVE_AVX512_KERNELS
    if (active_isa() == Isa::avx512 && M <= kNtMaxRows) {
        const detail::SkinnyPrefetch prefetch = skinny_prefetch();
        return split(N, static_cast<long>(M) * N * K, kNnColumnBlock / 4, [&](int n0, int n1) {
            detail::skinny_nn_columns_avx512(M, n0, n1, K, alpha, A, lda, B, ldb, beta, C, ldc, prefetch);
        });
    }
#endif
    split(N, static_cast<long>(M) * N * K, kNnColumnBlock / 4, [&](int n0, int n1) {
        for (int c0 = n0; c0 < n1; c0 += kNnColumnBlock)
            nn_block(M, c0, std::min(n1, c0 + kNnColumnBlock), K, alpha, A, lda, B, ldb, beta, C, ldc);
    });
}

void skinny_tn(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C,
               int ldc) {
    if (K == 0) return scale(M, N, beta, C, ldc);
    if (tn_on_avx512(true, false, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) return;
    const TnRows rows = kTnRows[static_cast<std::size_t>(K - 1)];
    const bool stream = stream_result(M, N, beta);
    split(M, static_cast<long>(M) * N * K, 32, [&](int m0, int m1) {
        rows(m0, m1, N, alpha, A, lda, B, ldb, beta, C, ldc, stream);
#if defined(__AVX__)
        _mm_sfence();  // streamed stores are weakly ordered: make them visible before returning
#endif
    });
}

namespace {

// X (rows, cols, leading dimension ld) transposed into scratch: (cols, rows), leading dimension rows.
// The small side is cols (a Conv1d's 7 positions): row by row of the result, so the stores run
// contiguously. Column by column of X instead, each of X's rows scattered its 7 floats 2-8 KiB
// apart, and the stores' 4K aliasing with the loads took ~0.1 ms for a (2048, 7) operand.
const float* transposed(const float* X, int rows, int cols, int ld, detail::AlignedScratch& scratch) {
    scratch.resize(static_cast<std::size_t>(rows) * cols);
    for (int c = 0; c < cols; ++c) {
        float* out = scratch.data() + static_cast<std::size_t>(c) * rows;
        for (int r = 0; r < rows; ++r) out[r] = X[static_cast<std::ptrdiff_t>(r) * ld + c];
    }
    return scratch.data();
}

// Small per-thread buffers for the transposed skinny operand and result: sized once, reused
// by every step (the kernels may run on the pool's workers, hence thread_local).
struct Scratch {
    detail::AlignedScratch a, b, c;
};
Scratch& scratch() {
    thread_local Scratch s;
    return s;
}

}  // namespace

// K <= 7 on both kernels: the ranks vec::adam_update_product makes its gradient at
static_assert(kNtMaxRows == vec::kMaxGradientRank);
bool skinny_tn_kernel_takes(int M, int N, int K) {
    return M > kSkinnyRows && N > kSkinnyRows && K >= 1 && K <= kNtMaxRows;
}

bool skinny_gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
                 int ldb, float beta, float* C, int ldc) {
    Scratch& s = scratch();
    if (M <= kSkinnyRows) {  // few rows of C: a Linear layer's forward y = x·Wᵀ and its dx = dy·W
        if (trans_a) {       // op(A) = Aᵀ, A stored (K, M): transpose the small operand
            A = transposed(A, K, M, lda, s.a);
            lda = K;
        }
        if (trans_b)
            skinny_nt(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        else
            skinny_nn(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return true;
    }
    if (N <= kSkinnyRows) {  // few columns of C (Conv1d's y = W·x on 7 positions): solve for Cᵀ
        // Cᵀ (N, M) = op(B)ᵀ (N, K) · op(A)ᵀ (K, M), with op(B)ᵀ small and row-major.
        const float* Bt = trans_b ? B : transposed(B, K, N, ldb, s.b);
        const int ldbt = trans_b ? ldb : K;
        s.c.resize(static_cast<std::size_t>(N) * M);
        if (trans_a)  // op(A)ᵀ = A, stored (K, M)
            skinny_nn(N, M, K, 1.f, Bt, ldbt, A, lda, 0.f, s.c.data(), M);
        else  // op(A)ᵀ = Aᵀ with A stored (M, K): the NT form
            skinny_nt(N, M, K, 1.f, Bt, ldbt, A, lda, 0.f, s.c.data(), M);
        for (int m = 0; m < M; ++m) {
            float* c = C + static_cast<std::ptrdiff_t>(m) * ldc;
            for (int n = 0; n < N; ++n) c[n] = blend(s.c[static_cast<std::size_t>(n) * M + m], alpha, beta, c[n]);
        }
        return true;
    }
    if (K <= kSkinnyRows) {  // a short inner dimension: a weight gradient dW = dyᵀ·x over 7 rows (skinny_tn_kernel_takes)
        if (tn_on_avx512(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) return true;
        // skinny_tn wants op(A) as Aᵀ with A (K, M) and op(B) as B (K, N), both row-major.
        const float* At = trans_a ? A : transposed(A, M, K, lda, s.a);
        const float* Bk = trans_b ? transposed(B, N, K, ldb, s.b) : B;
        skinny_tn(M, N, K, alpha, At, trans_a ? lda : M, Bk, trans_b ? N : ldb, beta, C, ldc);
        return true;
    }
    return false;
}

}  // namespace xtgrad
