// small_gemm's kernels (gemm/small_gemm.hpp says why they exist), written once over xsimd's
// architecture tag and compiled for the build's baseline (small_gemm.cpp, AVX2) and for AVX-512
// (small_gemm_avx512.cpp). Internal. Everything here is a template of Arch or inline, so the
// AVX-512 file cannot hand the baseline code an AVX-512 copy of a shared function.
//
// Notation: L = floats per SIMD batch (8 with AVX2, 16 with AVX-512); a tile of C is R <= MR rows
// by NB <= kMaxBatches batches of L columns.
#pragma once

#include <xtgrad/gemm/operand_offset.hpp>

#include <xsimd/xsimd.hpp>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace xtgrad::detail::small {

// Where a tile reads op(A) and writes C. op(A)(i, k) = A[i * a_row + k * a_col]: (lda, 1) for A
// stored (M, K), (1, lda) for Aᵀ (A stored (K, M)); the kernel broadcasts one element at a time,
// so the layout costs nothing and A is never copied. Element: float, or a pair of bf16 along K
// in one 32-bit word (gemm/small_gemm_bf16.cpp, whose K counts the pairs).
template <class Element>
struct TileArgsOf {
    int K;
    const Element* A;
    std::ptrdiff_t a_row, a_col;
    const Element* B;  // op(B) as row-major (K, ·) rows of stride ldb, at the tile's first column
    std::ptrdiff_t ldb;
    float alpha, beta;
    float* C;  // at the tile's first element
    std::ptrdiff_t ldc;
    int cols;  // columns of C this tile writes, <= NB · L (B holds NB · L readable columns)
};
using TileArgs = TileArgsOf<float>;

// C (M, N) tile by tile: table[rows][nb](t) over row tiles of at most MR rows and, across each,
// column tiles of at most max_batches batches of L; t holds the product's arguments with A at
// op(A)'s first row, B at the panel's first column and C at its first element. before_rows(i)
// runs before row tile i (the fp32 kernels' prefetches).
template <int L, int MR, int max_batches, class Args, class Table, class BeforeRows>
void run_tiles(Args t, int M, int N, const Table& table, BeforeRows before_rows) {
    const auto* const a = t.A;
    const auto* const panel = t.B;
    float* const c = t.C;
    const int batches = (N + L - 1) / L;
    for (int i = 0; i < M; i += MR) {
        const int rows = std::min(MR, M - i);
        t.A = offset_or_null(a, i * t.a_row);
        before_rows(i);
        for (int h = 0; h < batches; h += max_batches) {
            const int nb = std::min(max_batches, batches - h), j = h * L;
            t.B = offset_or_null(panel, j);
            t.C = c + static_cast<std::ptrdiff_t>(i) * t.ldc + j;
            t.cols = std::min(nb * L, N - j);
            table[static_cast<std::size_t>(rows)][static_cast<std::size_t>(nb)](t);
        }
    }
}

// The dot-product tiles' arguments (A · Bᵀ with both operands read along K).
struct DotArgs {
    int K;  // a multiple of L
    const float* A;
    std::ptrdiff_t lda;
    const float* B;
    std::ptrdiff_t ldb;
    float alpha, beta;
    float* C;
    std::ptrdiff_t ldc;
};

// table[r][c] = pick.operator()<r, c>() for 1 <= r <= Rows, 1 <= c <= Cols (row and column 0
// null): the kernel instantiated for each tile size, picked by the sizes a call needs.
template <class Fn, int Rows, int Cols, class Pick>
constexpr std::array<std::array<Fn, Cols + 1>, Rows + 1> kernel_table(Pick pick) {
    std::array<std::array<Fn, Cols + 1>, Rows + 1> table{};
    const auto fill_row = [&]<int R, int... C>(std::integer_sequence<int, C...>) {
        ((table[R][C + 1] = pick.template operator()<R, C + 1>()), ...);
    };
    [&]<int... R>(std::integer_sequence<int, R...>) {
        (fill_row.template operator()<R + 1>(std::make_integer_sequence<int, Cols>{}), ...);
    }(std::make_integer_sequence<int, Rows>{});
    return table;
}

// dst (L, L) = src (L, L)ᵀ, rows of stride ld_src and ld_dst, through registers. Only where the
// ISA's shuffles make it cheap (AVX-512: 64 shuffles per 256 floats); elsewhere scalar copies.
template <class Arch>
struct BlockTranspose {
    static constexpr bool available = false;
    static void run(const float*, std::ptrdiff_t, float*, std::ptrdiff_t) {}
};

#if defined(__AVX512F__)
template <>
struct BlockTranspose<xsimd::avx512bw> {
    static constexpr bool available = true;
    // The classic four rounds: 32-bit pairs, 64-bit pairs, then 128-bit lanes twice. The masked
    // forms name their pass-through lanes (all masked in): the plain ones' _mm512_undefined_ps
    // trips GCC 12's false -Wuninitialized (PR105593).
    static void run(const float* src, std::ptrdiff_t ld_src, float* dst, std::ptrdiff_t ld_dst) {
        constexpr __mmask16 all = 0xffff;
        __m512 r[16], t[16];
        for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + i * ld_src);
        for (int i = 0; i < 16; i += 2) {
            t[i] = _mm512_mask_unpacklo_ps(r[i], all, r[i], r[i + 1]);
            t[i + 1] = _mm512_mask_unpackhi_ps(r[i], all, r[i], r[i + 1]);
        }
        for (int i = 0; i < 16; i += 4) {
            r[i] = _mm512_mask_shuffle_ps(t[i], all, t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
            r[i + 1] = _mm512_mask_shuffle_ps(t[i], all, t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
            r[i + 2] = _mm512_mask_shuffle_ps(t[i + 1], all, t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
            r[i + 3] = _mm512_mask_shuffle_ps(t[i + 1], all, t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
        }
        for (int i = 0; i < 4; ++i) {
            t[i] = _mm512_mask_shuffle_f32x4(r[i], all, r[i], r[i + 4], 0x88);
            t[i + 4] = _mm512_mask_shuffle_f32x4(r[i], all, r[i], r[i + 4], 0xdd);
            t[i + 8] = _mm512_mask_shuffle_f32x4(r[i + 8], all, r[i + 8], r[i + 12], 0x88);
            t[i + 12] = _mm512_mask_shuffle_f32x4(r[i + 8], all, r[i + 8], r[i + 12], 0xdd);
        }
        for (int i = 0; i < 8; ++i) {
            _mm512_storeu_ps(dst + i * ld_dst, _mm512_mask_shuffle_f32x4(t[i], all, t[i], t[i + 8], 0x88));
            _mm512_storeu_ps(dst + (i + 8) * ld_dst, _mm512_mask_shuffle_f32x4(t[i], all, t[i], t[i + 8], 0xdd));
        }
    }
};
#endif

template <class Arch>
struct Kernels {
    using Batch = xsimd::batch<float, Arch>;
    static constexpr int L = static_cast<int>(Batch::size);
    // The classic outer-product micro-kernel: R x NB accumulators, every loaded B batch used R
    // times. MR x kMaxBatches accumulators + kMaxBatches batches of B + 1 broadcast of A fit the
    // register file: 6 x 2 + 2 + 1 = 15 of AVX2's 16, 6 x 4 + 4 + 1 = 29 of AVX-512's 32.
    static constexpr int MR = 6;
    static constexpr int kMaxBatches = L >= 16 ? 4 : 2;

    // C tile (R, cols) = alpha · op(A) (R, K) · B (K, NB · L) + beta · C.
    template <int R, int NB>
    static void tile(const TileArgs& t) {
        Batch acc[R][NB];
        for (int r = 0; r < R; ++r)
            for (int h = 0; h < NB; ++h) acc[r][h] = Batch(0.f);
        for (int k = 0; k < t.K; ++k) {
            const float* b = t.B + k * t.ldb;
            Batch bk[NB];
            for (int h = 0; h < NB; ++h) bk[h] = Batch::load_unaligned(b + h * L);
            const float* a = t.A + k * t.a_col;
            for (int r = 0; r < R; ++r) {
                const Batch ar(a[r * t.a_row]);
                for (int h = 0; h < NB; ++h) acc[r][h] = xsimd::fma(ar, bk[h], acc[r][h]);
            }
        }
        store_tile<R, NB>(acc, t.alpha, t.beta, t.C, t.ldc, t.cols);
    }

    // C tile (R, cols) = alpha · acc + beta · C (beta = 0 never reads C); the bf16 tiles'
    // epilogue too (gemm/small_gemm_bf16.cpp).
    template <int R, int NB>
    static void store_tile(const Batch (&acc)[R][NB], float alpha, float beta, float* C, std::ptrdiff_t ldc, int cols) {
        const Batch alphas(alpha), betas(beta);
        for (int r = 0; r < R; ++r) {
            float* c = C + r * ldc;
            if (cols == NB * L) {
                for (int h = 0; h < NB; ++h) {
                    Batch out = acc[r][h] * alphas;
                    if (beta != 0.f) out = xsimd::fma(betas, Batch::load_unaligned(c + h * L), out);
                    out.store_unaligned(c + h * L);
                }
            } else {  // the last columns of C: through a buffer, so nothing past column N is touched
                alignas(64) float row[NB * L];
                for (int h = 0; h < NB; ++h) acc[r][h].store_aligned(row + h * L);
                for (int j = 0; j < cols; ++j) c[j] = beta == 0.f ? alpha * row[j] : alpha * row[j] + beta * c[j];
            }
        }
    }

    using Tile = void (*)(const TileArgs&);
    // tiles()[R][NB] (a function: the class is complete only inside member bodies)
    static const auto& tiles() {
        static constexpr auto table =
            kernel_table<Tile, MR, kMaxBatches>([]<int R, int NB>() -> Tile { return &tile<R, NB>; });
        return table;
    }

    // ---- A · Bᵀ with both read along K: q·kᵀ, and g·vᵀ in the context's backward ---------------
    // Both operands' rows run along K (d = 64 floats, contiguous), so each element of C is a dot
    // product of two rows: no transposed copy of B, R x S dot products per tile, summed across
    // the batch once at the end. Pays where B's copy would cost as much as the product (a few
    // rows of C: tutorial D's 10 x 10 blocks); the lane sums cost more than the copy on bigger
    // blocks, which take the packed path. 4 x 3 = 12 accumulators + 3 batches of B + 1 of A.
    static constexpr int DR = 4, DS = 3;

    // C tile (R, S) = alpha · A (R, K) · B (S, K)ᵀ + beta · C.
    template <int R, int S>
    static void dot_tile(const DotArgs& t) {
        Batch acc[R][S];
        for (int r = 0; r < R; ++r)
            for (int s = 0; s < S; ++s) acc[r][s] = Batch(0.f);
        for (int k = 0; k < t.K; k += L) {
            Batch b[S];
            for (int s = 0; s < S; ++s) b[s] = Batch::load_unaligned(t.B + s * t.ldb + k);
            for (int r = 0; r < R; ++r) {
                const Batch a = Batch::load_unaligned(t.A + r * t.lda + k);
                for (int s = 0; s < S; ++s) acc[r][s] = xsimd::fma(a, b[s], acc[r][s]);
            }
        }
        for (int r = 0; r < R; ++r)
            for (int s = 0; s < S; ++s) {
                float& c = t.C[r * t.ldc + s];
                const float dot = xsimd::hadd(acc[r][s]);
                c = t.beta == 0.f ? t.alpha * dot : t.alpha * dot + t.beta * c;
            }
    }

    using DotTile = void (*)(const DotArgs&);
    // dot_tiles()[R][S]
    static const auto& dot_tiles() {
        static constexpr auto table =
            kernel_table<DotTile, DR, DS>([]<int R, int S>() -> DotTile { return &dot_tile<R, S>; });
        return table;
    }

    static void nt_dots(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                        float* C, int ldc) {
        DotArgs t{K, nullptr, lda, nullptr, ldb, alpha, beta, nullptr, ldc};
        const auto& table = dot_tiles();
        for (int i = 0; i < M; i += DR) {
            const int rows = std::min(DR, M - i);
            t.A = A + static_cast<std::ptrdiff_t>(i) * lda;
            for (int j = 0; j < N; j += DS) {
                t.B = B + static_cast<std::ptrdiff_t>(j) * ldb;
                t.C = C + static_cast<std::ptrdiff_t>(i) * ldc + j;
                table[static_cast<std::size_t>(rows)][static_cast<std::size_t>(std::min(DS, N - j))](t);
            }
        }
    }

    // op(B) as a row-major (K, padded) panel, padded = N rounded up to L with zero columns, so
    // every tile loads whole batches. Per thread (the attention core calls from the pool's
    // workers) and reused: sized once.
    // The panel starts on a cache line and its rows are whole batches: a batch load that splits
    // across two lines costs two (it took the AVX-512 tiles from ~90 % to ~65 % of the FMA peak).
    static const float* packed_b(bool trans_b, int N, int K, const float* B, int ldb, int padded) {
        constexpr std::size_t kLine = 64 / sizeof(float);
        thread_local std::vector<float> buffer;
        if (buffer.size() < static_cast<std::size_t>(K) * padded + kLine)
            buffer.resize(static_cast<std::size_t>(K) * padded + kLine);
        float* panel = buffer.data() + (kLine - reinterpret_cast<std::uintptr_t>(buffer.data()) / sizeof(float) % kLine) % kLine;
        if (!trans_b) {
            for (int k = 0; k < K; ++k) {
                float* row = panel + static_cast<std::ptrdiff_t>(k) * padded;
                std::copy_n(B + static_cast<std::ptrdiff_t>(k) * ldb, N, row);
                std::fill(row + N, row + padded, 0.f);  // the padding: every other element is written
            }
            return panel;
        }
        // B stored (N, K): column k of B becomes row k. Scalar loads took a fifth of a 100 x 100
        // x 64 q·kᵀ; where the ISA has it, L x L blocks go through registers, B's last rows (N not
        // a multiple of L) as a block whose other rows are zeros, which writes the panel's padding
        // too (scalar, with a fill per row, they took half of a 20 x 20 x 64 q·kᵀ).
        int k_done = 0;
        if constexpr (BlockTranspose<Arch>::available) {
            k_done = K / L * L;
            alignas(64) float last_rows[L * L];
            const int n_whole = N / L * L;
            if (n_whole < N && k_done > 0) std::fill(last_rows, last_rows + L * L, 0.f);
            for (int n = 0; n < N; n += L)
                for (int k = 0; k < k_done; k += L) {
                    const float* block = B + static_cast<std::ptrdiff_t>(n) * ldb + k;
                    std::ptrdiff_t ld = ldb;
                    if (n == n_whole) {
                        for (int r = 0; r < N - n; ++r) std::copy_n(block + static_cast<std::ptrdiff_t>(r) * ldb, L, last_rows + r * L);
                        block = last_rows;
                        ld = L;
                    }
                    BlockTranspose<Arch>::run(block, ld, panel + static_cast<std::ptrdiff_t>(k) * padded + n, padded);
                }
        }
        for (int k = k_done; k < K; ++k) {
            float* row = panel + static_cast<std::ptrdiff_t>(k) * padded;
            for (int n = 0; n < N; ++n) row[n] = B[static_cast<std::ptrdiff_t>(n) * ldb + k];
            std::fill(row + N, row + padded, 0.f);
        }
        return panel;
    }

    // Asks for the next row tile's rows of A (rows (n, K), stride ld) while this one computes: a
    // tile reads each row as a short stream of K floats that the hardware prefetcher does not
    // follow in time; the attention core's q comes from L3 or memory, and the first tile's FMAs
    // waited on it (q·kᵀ on 100 x 100 x 64 slices ran at half its in-cache speed).
    static void prefetch_rows(const float* a, int n, int K, int ld) {
        constexpr int kLine = 64 / static_cast<int>(sizeof(float));
        for (int r = 0; r < n; ++r)
            for (int k = 0; k < K; k += kLine) __builtin_prefetch(a + static_cast<std::ptrdiff_t>(r) * ld + k);
    }

    // The same for Aᵀ (A stored (K, M)): a tile reads MR columns, a line of each of A's K rows,
    // and the next tile's columns sit mostly in the same lines; their last one is asked for.
    static void prefetch_column(const float* a, int K, int ld) {
        for (int k = 0; k < K; ++k) __builtin_prefetch(a + static_cast<std::ptrdiff_t>(k) * ld);
    }

    // C (M, N) = alpha · op(A) · op(B) + beta · C. `dots`: A · Bᵀ through dot-product tiles
    // (needs K a multiple of L), else outer-product tiles over a row-major panel of op(B).
    static void run(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                    const float* B, int ldb, float beta, float* C, int ldc, bool dots) {
        if (dots && !trans_a && trans_b && K % L == 0) return nt_dots(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        // B is read in place when it already is row-major (K, N) in whole batches (w·v, ds·k:
        // N = 64); otherwise (q·kᵀ reads k transposed) it is packed first: K·N copies against
        // M·N·K multiply-adds.
        const bool in_place = !trans_b && N % L == 0;
        const int padded = (N + L - 1) / L * L;
        const float* panel = in_place ? B : packed_b(trans_b, N, K, B, ldb, padded);
        const TileArgs t{K, A, trans_a ? 1 : lda, trans_a ? lda : 1, panel, in_place ? ldb : padded, alpha, beta, C, ldc, 0};
        run_tiles<L, MR, kMaxBatches>(t, M, N, tiles(), [&](int i) {
            if (!trans_a)
                prefetch_rows(A + static_cast<std::ptrdiff_t>(i + MR) * lda, std::min(MR, M - i - MR), K, lda);
            else if (i + MR < M)  // Aᵀ: the next tile's last column, one line per row of A
                prefetch_column(A + std::min(i + 2 * MR, M) - 1, K, lda);
        });
    }
};

}  // namespace xtgrad::detail::small
