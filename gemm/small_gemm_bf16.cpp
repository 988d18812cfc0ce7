// small_gemm's bf16 kernel: the medium blocks under autocast (gemm/small_gemm.hpp says which),
// with AVX512-BF16's vdpbf16ps. meson compiles this file alone with -march=x86-64-v4
// -mavx512bf16; small_gemm.cpp calls it only where the CPU has AVX512-BF16.
//
// vdpbf16ps multiplies 16 lanes of bf16 pairs: acc[j] += a[2j]·b[2j] + a[2j+1]·b[2j+1], twice the
// multiply-adds of an fp32 FMA in one instruction. So both operands are packed as pairs along K
// (gemm/bf16_pairs.hpp): op(B) as the panel (K/2, padded), a batch of 16 columns per load; op(A)
// broadcast one word at a time, so it is read where packing is cheapest. Packing rounds
// K·(M + N) values for M·N·K products.
// Notation as small_gemm_impl.hpp: L = 16 lanes, a tile R <= MR rows by NB <= kMaxBatches batches.
#include <xtgrad/gemm/small_gemm.hpp>

#include <xtgrad/gemm/bf16_pairs.hpp>
#include <xtgrad/gemm/small_gemm_impl.hpp>

#if !defined(__AVX512BF16__) || !defined(__AVX512BW__)
#error "small_gemm_bf16.cpp must be compiled with -march=x86-64-v4 -mavx512bf16 (meson does)"
#endif

#include <immintrin.h>

#include <cstdint>

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

}  // namespace

void small_gemm_bf16_avx512(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                            const float* B, int ldb, float beta, float* C, int ldc) {
    const int pairs = (K + 1) / 2, padded = (N + L - 1) / L * L;
    const std::uint32_t* panel = pack_b_pairs(trans_b, N, K, B, ldb, pairs, pairs, padded);
    const PairTileArgs t{pairs, pack_a_pairs(trans_a, M, K, A, lda, pairs), trans_a ? 1 : pairs, trans_a ? M : 1, panel, padded,
                         alpha, beta, C, ldc, 0};
    small::run_tiles<L, MR, kMaxBatches>(t, M, N, pair_tiles(), [](int) {});
    release_large_pair_buffers();
}

}  // namespace xtgrad::detail
