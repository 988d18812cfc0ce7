// skinny_nt and skinny_nn on AVX-512 (gemm/skinny_gemm.hpp), for M <= 7: a Linear's (or,
// through Cᵀ, a Conv1d's) forward product and its dx on a 7-token sentence; skinny_tn for
// K <= 7: its weight gradient. meson compiles this file with -march=x86-64-v4; skinny_gemm.cpp
// calls it only when simd/cpu_isa.hpp chose AVX-512.
//
// Why kernels of their own: each product is a stream over the weight B with 7 multiply-adds per
// element, so what limits it is how fast B arrives, and oneDNN's sgemm streams it at 14-25 GB/s
// against the 38 one read stream reaches (Zen 5, bench/skinny_bench, bench/bandwidth_bench).
// skinny_nt, C (M, N) = alpha · A (M, K) · B (N, K)ᵀ + beta · C: 4 rows of B per tile, 28
// accumulators (~212 GFLOP/s with B in L2 on the Zen 5; ~80 on the Zen 4, whose AVX-512 runs at
// half width, where the arithmetic is as long as the read), and a software prefetch of the tile
// two ahead walked as the one contiguous region those rows are; with the hardware prefetcher
// alone, which sees 4 interleaved 2 KiB streams, the same tiles reached 20 GB/s, with it 38.
// Where the prefetches bring the weight (L1 or L2) is the caller's (SkinnyPrefetch): on the Zen 4
// into L1 the product stayed near the sum of its memory time and its arithmetic (skinny_bench:
// 6.1-6.5 ms per 64 MiB, read floor 2.8-3.5, in cache 2.7); into L2, which takes more lines in
// flight and leaves L1's miss buffers to the loads, 4.2-5.3 ms.
#include <xtgrad/gemm/skinny_avx512.hpp>

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#if !defined(__AVX512F__)
#error "skinny_avx512.cpp must be compiled with -march=x86-64-v4 (meson does)"
#endif

namespace xtgrad::detail {
namespace {

constexpr int kTile = 4;       // rows of B per tile
constexpr int kAheadTiles = 2;  // prefetch distance

// The sum of v's 16 lanes. The masked shuffles name their pass-through lanes (v, all masked
// in): the plain ones' _mm512_undefined_ps trips GCC 12's false -Wuninitialized (PR105593), as
// _mm512_reduce_add_ps does.
inline float lane_sum(__m512 v) {
    constexpr __mmask16 all = 0xffff;
    v = _mm512_add_ps(v, _mm512_mask_shuffle_f32x4(v, all, v, v, _MM_SHUFFLE(1, 0, 3, 2)));
    v = _mm512_add_ps(v, _mm512_mask_shuffle_f32x4(v, all, v, v, _MM_SHUFFLE(2, 3, 0, 1)));
    v = _mm512_add_ps(v, _mm512_mask_permute_ps(v, all, v, _MM_SHUFFLE(1, 0, 3, 2)));
    v = _mm512_add_ps(v, _mm512_mask_permute_ps(v, all, v, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm512_cvtss_f32(v);
}

// The lane sums of 4 vectors at once, each the very sum lane_sum gives (the same pairs added in
// the same order: quarters 0+2 and 1+3, then the two, then elements 0+2 and 1+3, then the two),
// but 4 vectors share each shuffle and add: 15 instructions for 4 sums against 32. With
// K = 512 a tile's 28 sums took a fifth of its time: on the Zen 4 skinny_bench's forward in
// cache 2.73 -> 2.52 ms per 64 MiB, the Winter Games inference 12.2-13.0 -> 11.2-11.4 ms (1
// thread, 3 alternating rounds), the same bits.
// (Masked forms throughout, for the reason lane_sum gives.)
inline void lane_sums4(__m512 a, __m512 b, __m512 c, __m512 d, float* out) {
    constexpr __mmask16 all = 0xffff;
    const auto quarter_pairs = [](__m512 x, __m512 y) {  // [x.q0+x.q2, x.q1+x.q3, y.q0+y.q2, y.q1+y.q3]
        return _mm512_add_ps(_mm512_mask_shuffle_f32x4(x, all, x, y, _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_mask_shuffle_f32x4(x, all, x, y, _MM_SHUFFLE(3, 2, 3, 2)));
    };
    const __m512 ab = quarter_pairs(a, b), cd = quarter_pairs(c, d);
    // quarter i: vector i's (q0+q2)+(q1+q3)
    __m512 v = _mm512_add_ps(_mm512_mask_shuffle_f32x4(ab, all, ab, cd, _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_mask_shuffle_f32x4(ab, all, ab, cd, _MM_SHUFFLE(3, 1, 3, 1)));
    v = _mm512_add_ps(v, _mm512_mask_permute_ps(v, all, v, _MM_SHUFFLE(1, 0, 3, 2)));
    v = _mm512_add_ps(v, _mm512_mask_permute_ps(v, all, v, _MM_SHUFFLE(2, 3, 0, 1)));
    // element 0 of each quarter, into out[0..4)
    const __m512i firsts = _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    _mm512_mask_storeu_ps(out, 0x000f, _mm512_mask_permutexvar_ps(v, all, firsts, v));
}

// dot (MB, NB) = A (MB, K) · B[rows 0..NB) (NB, K)ᵀ; prefetches [pf, pf_end) a line per row of
// the tile per 16 floats of K (pf = 0: none). Addresses are integers until they are in range.
// _MM_HINT_T0 (L1) or _MM_HINT_T1 (L2)
template <SkinnyPrefetch P>
inline void prefetch_line(std::uintptr_t p) {
    _mm_prefetch(reinterpret_cast<const char*>(p), P == SkinnyPrefetch::l2 ? _MM_HINT_T1 : _MM_HINT_T0);
}

template <int MB, int NB, SkinnyPrefetch P>
void tile(int K, const float* A, int lda, const float* B, int ldb, std::uintptr_t pf, std::uintptr_t pf_end,
          float (&dot)[MB][NB]) {
    __m512 acc[MB][NB];
    for (auto& row : acc)
        for (__m512& a : row) a = _mm512_setzero_ps();
    int k = 0;
    for (; k + 16 <= K; k += 16) {
        __m512 b[NB];
        for (int j = 0; j < NB; ++j) b[j] = _mm512_loadu_ps(B + static_cast<std::ptrdiff_t>(j) * ldb + k);
        for (int j = 0; j < NB; ++j) {
            const std::uintptr_t p = pf + sizeof(float) * static_cast<std::size_t>(NB * k + 16 * j);
            if (pf != 0 && p < pf_end) prefetch_line<P>(p);
        }
        for (int i = 0; i < MB; ++i) {
            const __m512 a = _mm512_loadu_ps(A + static_cast<std::ptrdiff_t>(i) * lda + k);
            for (int j = 0; j < NB; ++j) acc[i][j] = _mm512_fmadd_ps(a, b[j], acc[i][j]);
        }
    }
    if (k < K) {  // K's tail: masked loads read nothing past the row
        const __mmask16 m = static_cast<__mmask16>((1u << (K - k)) - 1);
        __m512 b[NB];
        for (int j = 0; j < NB; ++j) b[j] = _mm512_maskz_loadu_ps(m, B + static_cast<std::ptrdiff_t>(j) * ldb + k);
        for (int i = 0; i < MB; ++i) {
            const __m512 a = _mm512_maskz_loadu_ps(m, A + static_cast<std::ptrdiff_t>(i) * lda + k);
            for (int j = 0; j < NB; ++j) acc[i][j] = _mm512_fmadd_ps(a, b[j], acc[i][j]);
        }
    }
    if constexpr (NB == 4) {
        for (int i = 0; i < MB; ++i) lane_sums4(acc[i][0], acc[i][1], acc[i][2], acc[i][3], dot[i]);
    } else {
        for (int i = 0; i < MB; ++i)
            for (int j = 0; j < NB; ++j) dot[i][j] = lane_sum(acc[i][j]);
    }
}

template <int MB, SkinnyPrefetch P>
void columns(int n0, int n1, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
             float* C, int ldc) {
    // B's last row ends at b_end: no prefetch past it
    const std::uintptr_t b_begin = reinterpret_cast<std::uintptr_t>(B);
    const std::uintptr_t b_end = b_begin + sizeof(float) * (static_cast<std::size_t>(N - 1) * ldb + K);
    const auto store = [&](int n, const auto& dot, int nb) {
        for (int i = 0; i < MB; ++i)
            for (int j = 0; j < nb; ++j) {
                float& c = C[static_cast<std::ptrdiff_t>(i) * ldc + n + j];
                c = beta == 0.f ? alpha * dot[i][j] : alpha * dot[i][j] + beta * c;  // beta 0: C not read
            }
    };
    int n = n0;
    for (; n + kTile <= n1; n += kTile) {
        float dot[MB][kTile];
        const std::uintptr_t pf = b_begin + sizeof(float) * static_cast<std::size_t>(n + kAheadTiles * kTile) * ldb;
        tile<MB, kTile, P>(K, A, lda, B + static_cast<std::ptrdiff_t>(n) * ldb, ldb, pf, b_end, dot);
        store(n, dot, kTile);
    }
    for (; n < n1; ++n) {
        float dot[MB][1];
        tile<MB, 1, P>(K, A, lda, B + static_cast<std::ptrdiff_t>(n) * ldb, ldb, 0, 0, dot);
        store(n, dot, 1);
    }
}

// ---- skinny_nn: C (M, N) = alpha · A (M, K) · B (K, N) + beta · C, M <= 7 --------------------
// B's rows are consumed in chunks of kNnChunk rows, in order: for each 48-column strip of the
// chunk, 7 x 3 accumulators (C's rows, 3 zmm of columns) take 21 multiply-adds per 3 loads of B,
// then go back to a scratch row block that stays in L1. While a chunk is multiplied, the next
// one is prefetched line by line in storage order, a few lines with each row of the strip, so
// B streams in storage order (the strips re-read the chunk from L1/L2). Every C element sums its
// K products in k order, whatever the column split or strip width.
// 64-column strips (7 x 4 accumulators + 4 of B + A's broadcast = 33 zmm) spilled one
// accumulator to the stack, and the strip's prefetches issued in one burst stalled on the
// miss buffers: on Zen 5, `skinny_bench` dx 2.72 -> 2.06 ms per 64 MiB from memory (the read
// floor ~2.0), 2.71 -> 1.55 in cache; the winter step's dx ~0.3 ms per step less.
// Prefetching instead the same strip of the next chunk with each row of B loaded costs fewer
// instructions (dx with B in cache 1.35-1.44 against 1.99 ms per 64 MiB, bench/skinny_bench)
// but made the winter step's dx slower (7.0-7.4 -> 8.0-8.5 ms per step): the order in which
// memory is asked for counts more here than the kernel's own speed.
constexpr int kNnChunk = 16;
constexpr int kStripVectors = 3;
constexpr int kStrip = 16 * kStripVectors;  // columns per strip

template <SkinnyPrefetch P>
struct Prefetcher {  // walks rows [r, r_end) x columns [n0, n1) of B a line at a time
    const float* B;
    int ldb, n0, n1, r, r_end, c;
    // The next `count` lines. The walk runs on locals, in registers: with the fields in memory
    // the walk was ~15 % of the kernel's instructions (perf annotate on bench/skinny_bench).
    void next(int count) {
        int row = r, col = c;
        const float* line = B + static_cast<std::ptrdiff_t>(row) * ldb;
        for (int p = 0; p < count && row < r_end; ++p) {
            prefetch_line<P>(reinterpret_cast<std::uintptr_t>(line + col));
            col += 16;
            if (col >= n1) col = n0, ++row, line += ldb;
        }
        r = row, c = col;
    }
};

template <int MB, SkinnyPrefetch P>
void nn_columns(int n0, int n1, int K, const float* A, int lda, const float* B, int ldb, float* acc_rows) {
    // acc_rows (MB, n1 - n0): the running sums, zeroed here
    const int width = n1 - n0;
    for (int i = 0; i < MB * width; ++i) acc_rows[i] = 0.f;
    const int lines_per_row = (width + 15) / 16;
    for (int k0 = 0; k0 < K; k0 += kNnChunk) {
        const int k1 = k0 + kNnChunk < K ? k0 + kNnChunk : K;
        Prefetcher<P> pf{B, ldb, n0, n1, k1, k1 + kNnChunk < K ? k1 + kNnChunk : K, n0};
        const int strips = (width + kStrip - 1) / kStrip;
        // lines of the next chunk per strip, so the prefetch spreads over this chunk's work
        const int pf_per_strip = ((k1 - k0) * lines_per_row + strips - 1) / strips;
        const int pf_per_step = (pf_per_strip + (k1 - k0) - 1) / (k1 - k0);  // a few with each row of the strip
        for (int s0 = 0; s0 < width; s0 += kStrip) {
            const int sw = width - s0 < kStrip ? width - s0 : kStrip;
            __mmask16 mask[kStripVectors];
            for (int j = 0; j < kStripVectors; ++j) {
                const int left = sw - 16 * j;
                mask[j] = left >= 16 ? static_cast<__mmask16>(0xffff) : left <= 0 ? 0 : static_cast<__mmask16>((1u << left) - 1);
            }
            __m512 acc[MB][kStripVectors];
            for (int i = 0; i < MB; ++i)
                for (int j = 0; j < kStripVectors; ++j) acc[i][j] = _mm512_maskz_loadu_ps(mask[j], acc_rows + i * width + s0 + 16 * j);
            for (int k = k0; k < k1; ++k) {
                pf.next(pf_per_step);
                const float* b_row = B + static_cast<std::ptrdiff_t>(k) * ldb + n0 + s0;
                __m512 b[kStripVectors];
                for (int j = 0; j < kStripVectors; ++j) b[j] = _mm512_maskz_loadu_ps(mask[j], b_row + 16 * j);
                for (int i = 0; i < MB; ++i) {
                    const __m512 a = _mm512_set1_ps(A[static_cast<std::ptrdiff_t>(i) * lda + k]);
                    for (int j = 0; j < kStripVectors; ++j) acc[i][j] = _mm512_fmadd_ps(a, b[j], acc[i][j]);
                }
            }
            for (int i = 0; i < MB; ++i)
                for (int j = 0; j < kStripVectors; ++j) _mm512_mask_storeu_ps(acc_rows + i * width + s0 + 16 * j, mask[j], acc[i][j]);
        }
    }
}

// ---- skinny_tn: C (M, N) = alpha · op(A)(M, K) · op(B)(K, N) + beta · C, K <= 7 -------------
// A Linear's weight gradient dW = dyᵀ · x on a 7-token sentence (or a kernel-1 Conv1d's,
// dy · xᵀ): a rank-7 update, 7 multiply-adds per element of C and nothing else, so what limits
// it is how fast C is written. oneDNN writes the (512, 2048) gradient at 8-28 GB/s; one store
// stream reaches 31 from memory, ~58 into cache (bench/bandwidth_bench, bench/skinny_bench).
// So: C is written once, row by row in storage order (one contiguous stream per thread). How is
// the caller's (`stream`, skinny_gemm.cpp): a gradient read only after the whole backward (Adam's
// step after it) goes out with streamed stores, which skip the read a plain store makes of each
// line first (the Winter Games step on the Zen 4: backward 27.5 -> 18.9 ms, 1 thread); one the
// optimizer's step in backward reads right after goes out with plain stores, into cache, and
// PREFETCHW claims its lines two rows ahead. op(B)'s K rows of a column block are first copied into an aligned
// per-thread panel (K x 1024 floats, <= 28 KiB: L1), whatever B's layout and alignment (a
// Conv1d's x is (N, K), transposed by the copy; a zmm load off a 64-byte line splits in two):
// the Conv1d's (512, 2048) gradient took 0.14 ms into cache with x transposed into a 16-byte
// aligned heap buffer and read there, 0.075 from the panel. Rows padded by a line
// (against 4 KiB aliasing) measured slower, 0.098 against 0.081 ms. The panel is the FMAs' memory operand; row m's K coefficients alpha · op(A)[m][k] are
// broadcast once into K zmm registers; 4 zmm of C (64 columns) per step keep 4 independent
// chains. Each element is alpha · op(A)[m][0] · op(B)[0][n] + ... in k order, then
// + beta · C[m][n]: the same sum for any split of the rows over threads.
constexpr int kTnColumns = 1024;
constexpr int kTnPanelStride = kTnColumns;  // floats between the panel's rows
constexpr int kTnMaxK = 7;

constexpr int kTnWriteAhead = 2;  // rows of C claimed ahead of the stores

// Asks for the line at address p in a writable state (PREFETCHW: AMD since K8, Intel since
// Broadwell, so every AVX-512 CPU), so a store finds it there instead of waiting for it. Never
// faults. Inline assembly: GCC emits PREFETCHW only with -mprfchw, not part of x86-64-v4.
inline void prefetch_for_write(std::uintptr_t p) { asm volatile("prefetchw (%0)" : : "r"(p)); }

// panel (K, c1 - c0), row stride kTnPanelStride = op(B)[:, c0:c1); op(B)[k][n] = B[k·sbk + n·sbn]
void copy_panel(int K, int c0, int c1, const float* B, std::ptrdiff_t sbk, std::ptrdiff_t sbn, float* panel) {
    for (int k = 0; k < K; ++k) {
        float* out = panel + static_cast<std::ptrdiff_t>(k) * kTnPanelStride;
        const float* in = B + k * sbk;
        if (sbn == 1)
            for (int n = c0; n < c1; ++n) out[n - c0] = in[n];
        else
            for (int n = c0; n < c1; ++n) out[n - c0] = in[n * sbn];
    }
}

// op(A): (M, K) at A[m·sam + k·sak]; op(B): (K, N) at B[k·sbk + n·sbn]; C: (M, N), row stride ldc,
// rows [m0, m1) written
template <int K>
void tn_rows(int m0, int m1, int N, float alpha, const float* A, std::ptrdiff_t sam, std::ptrdiff_t sak, const float* B,
             std::ptrdiff_t sbk, std::ptrdiff_t sbn, float beta, float* C, int ldc, bool stream) {
    alignas(64) thread_local float panel_storage[kTnMaxK * kTnPanelStride];  // per thread: the split runs on the pool
    float* const panel = panel_storage;  // the TLS address once (a shared library's TLS access is a call)
    const __m512 vbeta = _mm512_set1_ps(beta);
    for (int c0 = 0; c0 < N; c0 += kTnColumns) {
        const int c1 = N - c0 < kTnColumns ? N : c0 + kTnColumns;
        copy_panel(K, c0, c1, B, sbk, sbn, panel);
        const int width = c1 - c0;
        for (int m = m0; m < m1; ++m) {
            __m512 a[K];  // alpha · op(A)[m][k], broadcast
            for (int k = 0; k < K; ++k) a[k] = _mm512_set1_ps(alpha * A[m * sam + k * sak]);
            float* c = C + static_cast<std::ptrdiff_t>(m) * ldc + c0;  // row m of C, from column c0
            // the same columns kTnWriteAhead rows on, as an integer (it may lie past C)
            const std::uintptr_t c_ahead = reinterpret_cast<std::uintptr_t>(c) + sizeof(float) * kTnWriteAhead * static_cast<std::size_t>(ldc);
            // 16 columns of row m at n, masked: sum over k, then beta · C (C not read when beta = 0)
            const auto one = [&](int n, __mmask16 mask) {
                __m512 acc = _mm512_mul_ps(a[0], _mm512_maskz_loadu_ps(mask, panel + n));
                for (int k = 1; k < K; ++k)
                    acc = _mm512_fmadd_ps(a[k], _mm512_maskz_loadu_ps(mask, panel + k * kTnPanelStride + n), acc);
                if (beta != 0.f) acc = _mm512_fmadd_ps(vbeta, _mm512_maskz_loadu_ps(mask, c + n), acc);
                _mm512_mask_storeu_ps(c + n, mask, acc);
            };
            int n = 0;
            // A streamed store needs a 64-byte aligned address: the row's first columns go alone, and
            // the panel is read unaligned from there (a gradient's rows all start aligned: no split load)
            if (stream) {
                const int head = static_cast<int>((64 - reinterpret_cast<std::uintptr_t>(c) % 64) % 64 / sizeof(float));
                n = head < width ? head : width;
                if (n > 0) one(0, static_cast<__mmask16>((1u << n) - 1));
            }
            for (; n + 64 <= width; n += 64) {
                __m512 acc[4];
                for (int j = 0; j < 4; ++j) acc[j] = _mm512_mul_ps(a[0], _mm512_loadu_ps(panel + n + 16 * j));
                for (int k = 1; k < K; ++k)
                    for (int j = 0; j < 4; ++j)
                        acc[j] = _mm512_fmadd_ps(a[k], _mm512_loadu_ps(panel + k * kTnPanelStride + n + 16 * j), acc[j]);
                if (beta != 0.f)
                    for (int j = 0; j < 4; ++j) acc[j] = _mm512_fmadd_ps(vbeta, _mm512_loadu_ps(c + n + 16 * j), acc[j]);
                if (stream) {
                    for (int j = 0; j < 4; ++j) _mm512_stream_ps(c + n + 16 * j, acc[j]);
                } else {
                    for (int j = 0; j < 4; ++j) _mm512_storeu_ps(c + n + 16 * j, acc[j]);
                    for (int j = 0; j < 4; ++j)
                        prefetch_for_write(c_ahead + sizeof(float) * static_cast<std::size_t>(n + 16 * j));
                }
            }
            for (; n + 16 <= width; n += 16) one(n, static_cast<__mmask16>(0xffff));
            if (n < width) one(n, static_cast<__mmask16>((1u << (width - n)) - 1));  // the row's tail
        }
    }
    if (stream) _mm_sfence();  // streamed stores are weakly ordered: visible before the pool's job ends
}

}  // namespace

void skinny_tn_rows_avx512(int m0, int m1, int N, int K, float alpha, const float* A, std::ptrdiff_t sam,
                           std::ptrdiff_t sak, const float* B, std::ptrdiff_t sbk, std::ptrdiff_t sbn, float beta,
                           float* C, int ldc, bool stream) {
    switch (K) {
        case 7: return tn_rows<7>(m0, m1, N, alpha, A, sam, sak, B, sbk, sbn, beta, C, ldc, stream);
        case 6: return tn_rows<6>(m0, m1, N, alpha, A, sam, sak, B, sbk, sbn, beta, C, ldc, stream);
        case 5: return tn_rows<5>(m0, m1, N, alpha, A, sam, sak, B, sbk, sbn, beta, C, ldc, stream);
        case 4: return tn_rows<4>(m0, m1, N, alpha, A, sam, sak, B, sbk, sbn, beta, C, ldc, stream);
        case 3: return tn_rows<3>(m0, m1, N, alpha, A, sam, sak, B, sbk, sbn, beta, C, ldc, stream);
        case 2: return tn_rows<2>(m0, m1, N, alpha, A, sam, sak, B, sbk, sbn, beta, C, ldc, stream);
        default: return tn_rows<1>(m0, m1, N, alpha, A, sam, sak, B, sbk, sbn, beta, C, ldc, stream);
    }
}

namespace {
// The kernel for M rows (1 to 7) and prefetch level P: f(std::integral_constant<int, M>, ...).
template <class F>
void for_rows(int M, SkinnyPrefetch p, F&& f) {
    const auto with_rows = [&](auto level) {
        switch (M) {
            case 7: return f(std::integral_constant<int, 7>{}, level);
            case 6: return f(std::integral_constant<int, 6>{}, level);
            case 5: return f(std::integral_constant<int, 5>{}, level);
            case 4: return f(std::integral_constant<int, 4>{}, level);
            case 3: return f(std::integral_constant<int, 3>{}, level);
            case 2: return f(std::integral_constant<int, 2>{}, level);
            default: return f(std::integral_constant<int, 1>{}, level);
        }
    };
    if (p == SkinnyPrefetch::l2) with_rows(std::integral_constant<SkinnyPrefetch, SkinnyPrefetch::l2>{});
    else with_rows(std::integral_constant<SkinnyPrefetch, SkinnyPrefetch::l1>{});
}
}  // namespace

void skinny_nn_columns_avx512(int M, int n0, int n1, int K, float alpha, const float* A, int lda, const float* B,
                              int ldb, float beta, float* C, int ldc, SkinnyPrefetch prefetch) {
    thread_local AlignedScratch sums;  // (M, n1 - n0); per thread: the split runs on the pool's workers
    const int width = n1 - n0;
    sums.resize(static_cast<std::size_t>(M) * static_cast<std::size_t>(width));
    for_rows(M, prefetch, [&](auto rows, auto level) {
        nn_columns<decltype(rows)::value, decltype(level)::value>(n0, n1, K, A, lda, B, ldb, sums.data());
    });
    for (int i = 0; i < M; ++i)
        for (int n = 0; n < width; ++n) {
            float& c = C[static_cast<std::ptrdiff_t>(i) * ldc + n0 + n];
            const float v = sums[static_cast<std::size_t>(i) * static_cast<std::size_t>(width) + static_cast<std::size_t>(n)];
            c = beta == 0.f ? alpha * v : alpha * v + beta * c;  // beta 0: C not read
        }
}

void skinny_nt_columns_avx512(int M, int n0, int n1, int N, int K, float alpha, const float* A, int lda, const float* B,
                              int ldb, float beta, float* C, int ldc, SkinnyPrefetch prefetch) {
    for_rows(M, prefetch, [&](auto rows, auto level) {
        columns<decltype(rows)::value, decltype(level)::value>(n0, n1, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    });
}

}  // namespace xtgrad::detail
