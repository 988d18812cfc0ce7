// Small products (see small_gemm.hpp for why they exist). Notation: L = floats per SIMD batch
// (8 with AVX2), NR = 2L columns and MR rows of C per tile.
#include <xtgrad/gemm/small_gemm.hpp>

#include <xtgrad/gemm/simd_batch.hpp>

#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <utility>
#include <vector>

namespace xtgrad {
namespace {

using simd::Batch;
using simd::L;
constexpr int NR = 2 * L;
// 6 rows x 2 batches = 12 accumulators, + 2 batches of B + 1 broadcast of A = 15 of AVX2's 16
// registers: the classic outer-product micro-kernel, every loaded B batch used 6 times.
constexpr int MR = 6;

// Where a tile reads op(A) and writes C. op(A)(i, k) = A[i * row + k * col]: (lda, 1) for A stored
// (M, K), (1, lda) for Aᵀ (A stored (K, M)); the kernel broadcasts one element at a time, so the
// layout costs nothing and A is never copied.
struct TileArgs {
    int K;
    const float* A;
    std::ptrdiff_t a_row, a_col;
    const float* B;  // op(B) as row-major (K, ·) rows of stride ldb, at the tile's first column
    std::ptrdiff_t ldb;
    float alpha, beta;
    float* C;  // at the tile's first element
    std::ptrdiff_t ldc;
    int cols;  // columns of C this tile writes, <= NR (B holds NR readable columns)
};

// C tile (R, cols) = alpha · op(A) (R, K) · B (K, NR) + beta · C, R <= MR.
template <int R>
void tile(const TileArgs& t) {
    Batch acc[R][2];
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = Batch(0.f);
    for (int k = 0; k < t.K; ++k) {
        const float* b = t.B + k * t.ldb;
        const Batch b0 = Batch::load_unaligned(b), b1 = Batch::load_unaligned(b + L);
        const float* a = t.A + k * t.a_col;
        for (int r = 0; r < R; ++r) {
            const Batch ar(a[r * t.a_row]);
            acc[r][0] = xsimd::fma(ar, b0, acc[r][0]);
            acc[r][1] = xsimd::fma(ar, b1, acc[r][1]);
        }
    }
    const Batch alpha(t.alpha), beta(t.beta);
    for (int r = 0; r < R; ++r) {
        float* c = t.C + r * t.ldc;
        if (t.cols == NR) {
            for (int h = 0; h < 2; ++h) {
                Batch out = acc[r][h] * alpha;
                if (t.beta != 0.f) out = xsimd::fma(beta, Batch::load_unaligned(c + h * L), out);
                out.store_unaligned(c + h * L);
            }
        } else {  // the last columns of C: through a buffer, so nothing past column N is touched
            alignas(64) float row[NR];
            acc[r][0].store_aligned(row);
            acc[r][1].store_aligned(row + L);
            for (int j = 0; j < t.cols; ++j) c[j] = t.beta == 0.f ? t.alpha * row[j] : t.alpha * row[j] + t.beta * c[j];
        }
    }
}

using Tile = void (*)(const TileArgs&);
constexpr Tile kTiles[MR + 1] = {nullptr, tile<1>, tile<2>, tile<3>, tile<4>, tile<5>, tile<6>};

// ---- A · Bᵀ with both read along K: q·kᵀ, and g·vᵀ in the context's backward -----------------
// Both operands' rows run along K (d = 64 floats, contiguous), so each element of C is a dot
// product of two rows: no transposed copy of B (which costs as much as the product at these
// sizes), R x S dot products per tile, summed across the batch once at the end.
// 4 x 3 = 12 accumulators + 3 batches of B + 1 of A = 16 registers.
constexpr int DR = 4, DS = 3;

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

// C tile (R, S) = alpha · A (R, K) · B (S, K)ᵀ + beta · C.
template <int R, int S>
void dot_tile(const DotArgs& t) {
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
template <int R, int... S>
constexpr std::array<DotTile, DS + 1> dot_row(std::integer_sequence<int, S...>) {
    return {nullptr, dot_tile<R, S + 1>...};
}
constexpr std::array<DotTile, DS + 1> kDotTiles[DR + 1] = {
    {}, dot_row<1>(std::make_integer_sequence<int, DS>{}), dot_row<2>(std::make_integer_sequence<int, DS>{}),
    dot_row<3>(std::make_integer_sequence<int, DS>{}), dot_row<4>(std::make_integer_sequence<int, DS>{})};

void small_nt_dots(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                   float* C, int ldc) {
    DotArgs t{K, nullptr, lda, nullptr, ldb, alpha, beta, nullptr, ldc};
    for (int i = 0; i < M; i += DR) {
        const int rows = std::min(DR, M - i);
        t.A = A + static_cast<std::ptrdiff_t>(i) * lda;
        for (int j = 0; j < N; j += DS) {
            t.B = B + static_cast<std::ptrdiff_t>(j) * ldb;
            t.C = C + static_cast<std::ptrdiff_t>(i) * ldc + j;
            kDotTiles[rows][static_cast<std::size_t>(std::min(DS, N - j))](t);
        }
    }
}

// op(B) as a row-major (K, padded) panel, padded = N rounded up to NR with zero columns, so every
// tile loads whole batches. Per thread (the attention core calls from the pool's workers) and
// reused: sized once.
const float* packed_b(bool trans_b, int N, int K, const float* B, int ldb, int padded) {
    thread_local std::vector<float> panel;
    if (panel.size() < static_cast<std::size_t>(K) * padded) panel.resize(static_cast<std::size_t>(K) * padded);
    for (int k = 0; k < K; ++k) {
        float* row = panel.data() + static_cast<std::ptrdiff_t>(k) * padded;
        if (trans_b)  // B stored (N, K): column k of B becomes row k
            for (int n = 0; n < N; ++n) row[n] = B[static_cast<std::ptrdiff_t>(n) * ldb + k];
        else
            std::copy_n(B + static_cast<std::ptrdiff_t>(k) * ldb, N, row);
        std::fill(row + N, row + padded, 0.f);  // only the padding: every other element was just written
    }
    return panel.data();
}

}  // namespace

void small_gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                const float* B, int ldb, float beta, float* C, int ldc) {
    if (!trans_a && trans_b && K % L == 0) return small_nt_dots(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    // B is read in place when it already is row-major (K, N) with whole tiles (w·v, ds·k: N = 64);
    // otherwise (q·kᵀ reads k transposed) it is packed first: K·N copies against M·N·K multiply-adds.
    const bool in_place = !trans_b && N % NR == 0;
    const int padded = (N + NR - 1) / NR * NR;
    const float* panel = in_place ? B : packed_b(trans_b, N, K, B, ldb, padded);
    TileArgs t{};
    t.K = K;
    t.a_row = trans_a ? 1 : lda;
    t.a_col = trans_a ? lda : 1;
    t.ldb = in_place ? ldb : padded;
    t.alpha = alpha;
    t.beta = beta;
    t.ldc = ldc;
    for (int i = 0; i < M; i += MR) {
        const int rows = std::min(MR, M - i);
        t.A = A + i * t.a_row;
        for (int j = 0; j < N; j += NR) {
            t.B = panel + j;
            t.C = C + static_cast<std::ptrdiff_t>(i) * ldc + j;
            t.cols = std::min(NR, N - j);
            kTiles[rows](t);
        }
    }
}

}  // namespace xtgrad
