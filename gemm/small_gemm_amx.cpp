// small_gemm's bf16 kernel on AMX tiles (gemm/small_gemm.hpp says which products it takes):
// TDPBF16PS multiplies a 16 x 32 bf16 tile of op(A) by a 32 x 16 one of op(B) into a 16 x 16 fp32
// tile of C, 8192 multiply-adds in one instruction, where vdpbf16ps does 32 (on the Intel Xeon it
// runs at half the fp32 FMA rate, so its kernel stays off there: docs/performance.md). meson
// compiles this file alone with -mamx-tile -mamx-bf16; small_gemm.cpp calls it only where
// simd/amx.hpp found the tiles permitted.
//
// Both operands are packed as pairs along K (gemm/bf16_pairs.hpp), zero-padded to whole tiles:
//   op(A) -> (Mp, Pp) words, Mp = M rounded up to 16, Pp = K/2 rounded up to 16: a tile is 16 rows
//            of 16 words (64 bytes);
//   op(B) -> (Pp, Np) words, Np = N rounded up to 16: a tile is 16 pair-rows of 16 columns, the
//            VNNI layout TDPBF16PS reads.
// C is computed in blocks of up to 2 x 2 tiles (32 x 32; tiles 0-3), each a sum over K's steps of
// 16 pairs (A in tiles 4-5, B in 6-7), then stored to a scratch block and written as alpha · AB +
// beta · C over the block's real rows and columns (beta = 0 never reads C). The padding's zeros
// add nothing.
//
// The tile configuration is the thread's and oneDNN's AMX kernels load their own, so each call
// loads this one first and releases the tiles at its end (the thread's tile state returns to
// its initial state, which a context switch need not save). So a caller's own tiles do not
// survive a call: tiles are not preserved across calls, as in the x86-64 ABI's AMX convention.
// TDPBF16PS reads a denormal bf16 as 0 and flushes a denormal sum to 0, as vdpbf16ps and the
// conversions do (gemm/bf16_convert.hpp).
#include <xtgrad/gemm/small_gemm.hpp>

#include <xtgrad/gemm/bf16_pairs.hpp>

// GCC names the tile macros __AMX_TILE__ and __AMX_BF16__, Clang __AMXTILE__ and __AMXBF16__
#if !(defined(__AMX_TILE__) || defined(__AMXTILE__)) || !(defined(__AMX_BF16__) || defined(__AMXBF16__)) || !defined(__AVX512F__)
#error "small_gemm_amx.cpp must be compiled with -march=x86-64-v4 -mavx512bf16 -mamx-tile -mamx-bf16 (meson does)"
#endif

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace xtgrad::detail {

namespace {

constexpr int T = 16;               // a tile's rows, and its columns of fp32 or of pair words
constexpr int kRowBytes = T * 4;    // 64: every tile's row
constexpr int kBlock = 2 * T;       // C's block: up to 2 x 2 tiles
constexpr int kScratchLd = kBlock;  // the scratch block's row, in floats

// palette 1, tiles 0-7 all 16 rows of 64 bytes (the layout LDTILECFG reads)
struct alignas(64) TileConfig {
    std::uint8_t palette = 1;
    std::uint8_t start_row = 0;
    std::uint8_t reserved[14] = {};
    std::uint16_t colsb[16] = {kRowBytes, kRowBytes, kRowBytes, kRowBytes, kRowBytes, kRowBytes, kRowBytes, kRowBytes};
    std::uint8_t rows[16] = {T, T, T, T, T, T, T, T};
};

// scratch (MT · 16, NT · 16) = op(A)'s rows a (MT · 16, steps · 16 words, row stride lda words)
// · op(B)'s columns b (steps · 16 pair-rows, NT · 16 words, row stride ldb words)
template <int MT, int NT>
void tile_block(const std::uint32_t* a, int lda, const std::uint32_t* b, int ldb, int steps, float* scratch) {
    const std::size_t a_stride = static_cast<std::size_t>(lda) * 4, b_stride = static_cast<std::size_t>(ldb) * 4;
    _tile_zero(0);
    if constexpr (NT == 2) _tile_zero(1);
    if constexpr (MT == 2) _tile_zero(2);
    if constexpr (MT == 2 && NT == 2) _tile_zero(3);
    for (int s = 0; s < steps; ++s) {
        const std::uint32_t* as = a + static_cast<std::ptrdiff_t>(s) * T;
        const std::uint32_t* bs = b + static_cast<std::ptrdiff_t>(s) * T * ldb;
        _tile_loadd(4, as, a_stride);
        if constexpr (MT == 2) _tile_loadd(5, as + static_cast<std::ptrdiff_t>(T) * lda, a_stride);
        _tile_loadd(6, bs, b_stride);
        if constexpr (NT == 2) _tile_loadd(7, bs + T, b_stride);
        _tile_dpbf16ps(0, 4, 6);
        if constexpr (NT == 2) _tile_dpbf16ps(1, 4, 7);
        if constexpr (MT == 2) _tile_dpbf16ps(2, 5, 6);
        if constexpr (MT == 2 && NT == 2) _tile_dpbf16ps(3, 5, 7);
    }
    constexpr std::size_t ld = kScratchLd * sizeof(float);
    _tile_stored(0, scratch, ld);
    if constexpr (NT == 2) _tile_stored(1, scratch + T, ld);
    if constexpr (MT == 2) _tile_stored(2, scratch + T * kScratchLd, ld);
    if constexpr (MT == 2 && NT == 2) _tile_stored(3, scratch + T * kScratchLd + T, ld);
}

// C (rows, cols) = alpha · scratch + beta · C, 16 columns per instruction, the last ones masked
void write_block(const float* scratch, int rows, int cols, float alpha, float beta, float* C, int ldc) {
    const __m512 a = _mm512_set1_ps(alpha), b = _mm512_set1_ps(beta);
    for (int r = 0; r < rows; ++r) {
        float* c = C + static_cast<std::ptrdiff_t>(r) * ldc;
        const float* s = scratch + r * kScratchLd;
        for (int j = 0; j < cols; j += T) {
            const __mmask16 m = cols - j >= T ? __mmask16(0xffff) : static_cast<__mmask16>((1u << (cols - j)) - 1u);
            __m512 v = _mm512_mul_ps(a, _mm512_maskz_loadu_ps(m, s + j));
            if (beta != 0.f) v = _mm512_fmadd_ps(b, _mm512_maskz_loadu_ps(m, c + j), v);
            _mm512_mask_storeu_ps(c + j, m, v);
        }
    }
}

}  // namespace

void small_gemm_bf16_amx(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                         const float* B, int ldb, float beta, float* C, int ldc) {
    const int pairs = (K + 1) / 2, padded_pairs = (pairs + T - 1) / T * T;
    const int padded_rows = (M + T - 1) / T * T, padded_cols = (N + T - 1) / T * T;
    const std::uint32_t* b = pack_b_pairs(trans_b, N, K, B, ldb, pairs, padded_pairs, padded_cols);
    const std::uint32_t* a = pack_a_pair_rows(trans_a, M, K, A, lda, pairs, padded_rows, padded_pairs);
    const int steps = padded_pairs / T;
    static const TileConfig config;
    _tile_loadconfig(&config);
    alignas(64) float scratch[kBlock * kScratchLd];
    for (int i = 0; i < M; i += kBlock) {
        const int rows = std::min(kBlock, M - i);
        const std::uint32_t* a_rows = a + static_cast<std::ptrdiff_t>(i) * padded_pairs;
        for (int j = 0; j < N; j += kBlock) {
            const int cols = std::min(kBlock, N - j);
            const std::uint32_t* b_cols = b + j;
            if (rows > T && cols > T) tile_block<2, 2>(a_rows, padded_pairs, b_cols, padded_cols, steps, scratch);
            else if (rows > T) tile_block<2, 1>(a_rows, padded_pairs, b_cols, padded_cols, steps, scratch);
            else if (cols > T) tile_block<1, 2>(a_rows, padded_pairs, b_cols, padded_cols, steps, scratch);
            else tile_block<1, 1>(a_rows, padded_pairs, b_cols, padded_cols, steps, scratch);
            write_block(scratch, rows, cols, alpha, beta, C + static_cast<std::ptrdiff_t>(i) * ldc + j, ldc);
        }
    }
    _tile_release();
    release_large_pair_buffers();
}

}  // namespace xtgrad::detail
