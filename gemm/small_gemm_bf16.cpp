// small_gemm's bf16 kernel: the medium blocks under autocast (gemm/small_gemm.hpp says which),
// with AVX512-BF16's vdpbf16ps. meson compiles this file alone with -march=x86-64-v4
// -mavx512bf16; small_gemm.cpp calls it only where the CPU has AVX512-BF16.
//
// vdpbf16ps multiplies 16 lanes of bf16 pairs: acc[j] += a[2j]·b[2j] + a[2j+1]·b[2j+1], twice the
// multiply-adds of an fp32 FMA in one instruction. So both operands are packed as pairs along K:
//   op(B) (K, N) -> the panel (K/2, padded): word (p, j) = (B(2p, j), B(2p+1, j)), the "VNNI"
//                   layout, a batch of 16 columns per load;
//   op(A) (M, K) -> word (i, p) = (A(i, 2p), A(i, 2p+1)), broadcast one word at a time, so it is
//                   read where packing is cheapest: (M, K/2) for A stored (M, K), (K/2, M) for Aᵀ.
// An odd K gets a zero in its last pair. Packing rounds K·(M + N) values for M·N·K products.
// Notation as small_gemm_impl.hpp: L = 16 lanes, a tile R <= MR rows by NB <= kMaxBatches batches.
#include <xtgrad/gemm/small_gemm.hpp>

#include <xtgrad/gemm/bf16_convert.hpp>
#include <xtgrad/gemm/small_gemm_impl.hpp>

#if !defined(__AVX512BF16__) || !defined(__AVX512BW__)
#error "small_gemm_bf16.cpp must be compiled with -march=x86-64-v4 -mavx512bf16 (meson does)"
#endif

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace xtgrad::detail {

namespace {

using Batch = xsimd::batch<float, xsimd::avx512bw>;  // the fp32 kernels' batch: the tiles share their epilogue
constexpr int L = 16;
constexpr int MR = small::Kernels<xsimd::avx512bw>::MR;
constexpr int kMaxBatches = small::Kernels<xsimd::avx512bw>::kMaxBatches;

// Where a tile reads its pairs and writes C: pair (i, p) of op(A) is A[i · a_row + p · a_col],
// B the panel's rows of ldb words; K counts the pairs (K / 2, rounded up).
using PairTileArgs = small::TileArgsOf<std::uint32_t>;

// C tile (R, cols) = alpha · op(A) (R, K) · op(B) (K, NB · L) + beta · C, two K per instruction.
template <int R, int NB>
void pair_tile(const PairTileArgs& t) {
    Batch acc[R][NB];
    for (int r = 0; r < R; ++r)
        for (int h = 0; h < NB; ++h) acc[r][h] = Batch(0.f);
    for (int p = 0; p < t.K; ++p) {
        const std::uint32_t* b = t.B + p * t.ldb;
        __m512bh bp[NB];
        for (int h = 0; h < NB; ++h) bp[h] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(b + h * L));
        const std::uint32_t* a = t.A + p * t.a_col;
        for (int r = 0; r < R; ++r) {
            const __m512bh ar = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(a[r * t.a_row])));
            for (int h = 0; h < NB; ++h) acc[r][h] = _mm512_dpbf16_ps(acc[r][h], ar, bp[h]);
        }
    }
    small::Kernels<xsimd::avx512bw>::store_tile<R, NB>(acc, t.alpha, t.beta, t.C, t.ldc, t.cols);
}

using PairTile = void (*)(const PairTileArgs&);
const auto& pair_tiles() {
    static constexpr auto table = small::kernel_table<PairTile, MR, kMaxBatches>(
        []<int R, int NB>() -> PairTile { return &pair_tile<R, NB>; });
    return table;
}

// out (n words) = (lo[j], hi[j]) rounded to bf16, lo in the low half; hi null: zeros (an odd
// K's last pair). vcvtne2ps2bf16 puts lo's 16 values below hi's; one word shuffle interleaves them.
void interleave_pairs(const float* lo, const float* hi, int n, std::uint32_t* out) {
    alignas(64) static constexpr std::uint16_t kInterleave[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,
                                                                  21, 6, 22, 7, 23, 8,  24, 9,  25, 10, 26,
                                                                  11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
    const __m512i order = _mm512_load_si512(kInterleave);
    for (int j = 0; j < n; j += L) {
        const __mmask16 m = n - j >= L ? __mmask16(0xffff) : static_cast<__mmask16>((1u << (n - j)) - 1u);
        const __m512 l = _mm512_maskz_loadu_ps(m, lo + j), h = hi ? _mm512_maskz_loadu_ps(m, hi + j) : _mm512_setzero_ps();
        const __m512i halves = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(h, l));
        _mm512_mask_storeu_epi32(out + j, m, _mm512_permutexvar_epi16(order, halves));
    }
}

// rows (n, pairs) words <- src (n, K) floats, row stride ld: each row's pairs are adjacent.
void pair_rows(const float* src, int n, int K, int ld, std::uint32_t* rows, int pairs) {
    for (int i = 0; i < n; ++i) {
        std::uint32_t* row = rows + static_cast<std::ptrdiff_t>(i) * pairs;
        if (pairs > 0) row[pairs - 1] = 0;  // an odd K's last pair keeps its zero high half
        bf16_row(src + static_cast<std::ptrdiff_t>(i) * ld, static_cast<std::size_t>(K), reinterpret_cast<std::uint16_t*>(row));
    }
}

// The panel (pairs, padded) for op(B), columns N..padded zero. B stored (K, N): rows 2p and 2p+1
// interleaved. B stored (N, K) (q·kᵀ reads k so): each row of B becomes a column of pairs, so its
// pairs are made in place and the (N, pairs) words transposed, 16 x 16 at a time in registers.
const std::uint32_t* pack_b(bool trans_b, int N, int K, const float* B, int ldb, int pairs, int padded) {
    constexpr std::size_t kLine = 64 / sizeof(std::uint32_t);
    thread_local std::vector<std::uint32_t> buffer;
    const std::size_t panel_size = static_cast<std::size_t>(pairs) * padded,
                      rows_size = trans_b ? static_cast<std::size_t>(N) * pairs : 0;
    if (buffer.size() < panel_size + rows_size + kLine) buffer.resize(panel_size + rows_size + kLine);
    // on a cache line: a batch load across two lines costs two (small_gemm_impl.hpp's packed_b)
    std::uint32_t* panel =
        buffer.data() + (kLine - reinterpret_cast<std::uintptr_t>(buffer.data()) / sizeof(std::uint32_t) % kLine) % kLine;
    if (!trans_b) {
        for (int p = 0; p < pairs; ++p) {
            std::uint32_t* row = panel + static_cast<std::ptrdiff_t>(p) * padded;
            const float* lo = B + static_cast<std::ptrdiff_t>(2 * p) * ldb;
            interleave_pairs(lo, 2 * p + 1 < K ? lo + ldb : nullptr, N, row);
            std::fill(row + N, row + padded, 0u);
        }
        return panel;
    }
    std::uint32_t* rows = panel + panel_size;
    pair_rows(B, N, K, ldb, rows, pairs);
    const int n_done = N / L * L, p_done = pairs / L * L;
    for (int n = 0; n < n_done; n += L)  // the words' bits move through float shuffles unchanged
        for (int p = 0; p < p_done; p += L)
            small::BlockTranspose<xsimd::avx512bw>::run(
                reinterpret_cast<const float*>(rows + static_cast<std::ptrdiff_t>(n) * pairs + p), pairs,
                reinterpret_cast<float*>(panel + static_cast<std::ptrdiff_t>(p) * padded + n), padded);
    for (int p = 0; p < pairs; ++p) {
        std::uint32_t* row = panel + static_cast<std::ptrdiff_t>(p) * padded;
        for (int n = p < p_done ? n_done : 0; n < N; ++n) row[n] = rows[static_cast<std::ptrdiff_t>(n) * pairs + p];
        std::fill(row + N, row + padded, 0u);
    }
    return panel;
}

// op(A)'s pairs: (M, pairs) for A stored (M, K), (pairs, M) for A stored (K, M).
const std::uint32_t* pack_a(bool trans_a, int M, int K, const float* A, int lda, int pairs) {
    thread_local std::vector<std::uint32_t> buffer;
    if (buffer.size() < static_cast<std::size_t>(M) * pairs) buffer.resize(static_cast<std::size_t>(M) * pairs);
    if (!trans_a) {
        pair_rows(A, M, K, lda, buffer.data(), pairs);
        return buffer.data();
    }
    for (int p = 0; p < pairs; ++p) {
        const float* lo = A + static_cast<std::ptrdiff_t>(2 * p) * lda;
        interleave_pairs(lo, 2 * p + 1 < K ? lo + lda : nullptr, M, buffer.data() + static_cast<std::ptrdiff_t>(p) * M);
    }
    return buffer.data();
}

}  // namespace

void small_gemm_bf16_avx512(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                            const float* B, int ldb, float beta, float* C, int ldc) {
    const int pairs = (K + 1) / 2, padded = (N + L - 1) / L * L;
    const std::uint32_t* panel = pack_b(trans_b, N, K, B, ldb, pairs, padded);
    const PairTileArgs t{pairs, pack_a(trans_a, M, K, A, lda, pairs), trans_a ? 1 : pairs, trans_a ? M : 1, panel, padded,
                         alpha, beta, C, ldc, 0};
    small::run_tiles<L, MR, kMaxBatches>(t, M, N, pair_tiles(), [](int) {});
}

}  // namespace xtgrad::detail
