#include <xtgrad/gemm/bf16_pairs.hpp>

#include <xtgrad/gemm/bf16_convert.hpp>
#include <xtgrad/gemm/small_gemm_impl.hpp>

#if !defined(__AVX512BF16__) || !defined(__AVX512BW__)
#error "bf16_pairs.cpp must be compiled with -march=x86-64-v4 -mavx512bf16 (meson does)"
#endif

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace xtgrad::detail {

namespace {

constexpr int kLanes = 16;  // words per AVX-512 register
constexpr std::size_t kLineWords = 64 / sizeof(std::uint32_t);

// This thread's packed operands: grown as needed, kept for the next call up to kKeptWords
// (release_large_pair_buffers), so the attention's blocks pack without allocating
thread_local std::vector<std::uint32_t> b_buffer, a_buffer;
constexpr std::size_t kKeptWords = std::size_t{1} << 20;  // 4 MiB each: a medium block's are <= 1 MiB

// `words` words of `buffer` (grown, never shrunk), from its first cache line: a load across two
// lines costs two (small_gemm_impl.hpp's packed_b)
std::uint32_t* on_a_line(std::vector<std::uint32_t>& buffer, std::size_t words) {
    if (buffer.size() < words + kLineWords) buffer.resize(words + kLineWords);
    return buffer.data() +
           (kLineWords - reinterpret_cast<std::uintptr_t>(buffer.data()) / sizeof(std::uint32_t) % kLineWords) % kLineWords;
}

// out (n words) = (lo[j], hi[j]) rounded to bf16, lo in the low half; hi null: zeros (an odd
// K's last pair). vcvtne2ps2bf16 puts lo's 16 values below hi's; one word shuffle interleaves them.
void interleave_pairs(const float* lo, const float* hi, int n, std::uint32_t* out) {
    alignas(64) static constexpr std::uint16_t kInterleave[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,
                                                                  21, 6, 22, 7, 23, 8,  24, 9,  25, 10, 26,
                                                                  11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
    const __m512i order = _mm512_load_si512(kInterleave);
    for (int j = 0; j < n; j += kLanes) {
        const __mmask16 m = n - j >= kLanes ? __mmask16(0xffff) : static_cast<__mmask16>((1u << (n - j)) - 1u);
        const __m512 l = _mm512_maskz_loadu_ps(m, lo + j), h = hi ? _mm512_maskz_loadu_ps(m, hi + j) : _mm512_setzero_ps();
        const __m512i halves = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(h, l));
        _mm512_mask_storeu_epi32(out + j, m, _mm512_permutexvar_epi16(order, halves));
    }
}

// rows (n, ld words) <- src (n, K) floats, row stride ld_src: each row's pairs adjacent, its words
// from `pairs` to `ld` zero.
void pair_rows(const float* src, int n, int K, int ld_src, std::uint32_t* rows, int pairs, int ld) {
    for (int i = 0; i < n; ++i) {
        std::uint32_t* row = rows + static_cast<std::ptrdiff_t>(i) * ld;
        std::fill(row + std::max(pairs - 1, 0), row + ld, 0u);  // an odd K's last pair keeps its zero high half
        bf16_row(src + static_cast<std::ptrdiff_t>(i) * ld_src, static_cast<std::size_t>(K),
                 reinterpret_cast<std::uint16_t*>(row));
    }
}

// dst (cols, ld_dst) = src (rows, cols)ᵀ, words, src's row stride ld_src: 16 x 16 blocks in
// registers (the words' bits move through float shuffles unchanged), the edges one by one.
void transpose_words(const std::uint32_t* src, int rows, int cols, int ld_src, std::uint32_t* dst, int ld_dst) {
    const int r_done = rows / kLanes * kLanes, c_done = cols / kLanes * kLanes;
    for (int r = 0; r < r_done; r += kLanes)
        for (int c = 0; c < c_done; c += kLanes)
            small::BlockTranspose<xsimd::avx512bw>::run(
                reinterpret_cast<const float*>(src + static_cast<std::ptrdiff_t>(r) * ld_src + c), ld_src,
                reinterpret_cast<float*>(dst + static_cast<std::ptrdiff_t>(c) * ld_dst + r), ld_dst);
    for (int c = 0; c < cols; ++c) {
        std::uint32_t* out = dst + static_cast<std::ptrdiff_t>(c) * ld_dst;
        for (int r = c < c_done ? r_done : 0; r < rows; ++r) out[r] = src[static_cast<std::ptrdiff_t>(r) * ld_src + c];
    }
}

// words (pairs, n): row p = the pairs of rows 2p and 2p + 1 of src (K, n floats, row stride ld_src),
// interleaved; row stride ld, words n..ld zero
void interleave_rows(const float* src, int n, int K, int ld_src, int pairs, std::uint32_t* words, int ld) {
    for (int p = 0; p < pairs; ++p) {
        std::uint32_t* row = words + static_cast<std::ptrdiff_t>(p) * ld;
        const float* lo = src + static_cast<std::ptrdiff_t>(2 * p) * ld_src;
        interleave_pairs(lo, 2 * p + 1 < K ? lo + ld_src : nullptr, n, row);
        std::fill(row + n, row + ld, 0u);
    }
}

}  // namespace

const std::uint32_t* pack_b_pairs(bool trans_b, int N, int K, const float* B, int ldb, int pairs, int rows,
                                  int padded) {
    std::vector<std::uint32_t>& buffer = b_buffer;
    const std::size_t panel_size = static_cast<std::size_t>(rows) * padded,
                      stored_size = trans_b ? static_cast<std::size_t>(N) * pairs : 0;
    std::uint32_t* panel = on_a_line(buffer, panel_size + stored_size);
    std::fill(panel + static_cast<std::ptrdiff_t>(pairs) * padded, panel + panel_size, 0u);
    if (!trans_b) {  // B stored (K, N): rows 2p and 2p + 1 interleaved
        interleave_rows(B, N, K, ldb, pairs, panel, padded);
        return panel;
    }
    // B stored (N, K) (q·kᵀ reads k so): each row of B becomes a column of pairs, so its pairs are
    // made in place and the (N, pairs) words transposed
    std::uint32_t* stored = panel + panel_size;
    pair_rows(B, N, K, ldb, stored, pairs, pairs);
    transpose_words(stored, N, pairs, pairs, panel, padded);
    for (int p = 0; p < pairs; ++p)
        std::fill(panel + static_cast<std::ptrdiff_t>(p) * padded + N, panel + static_cast<std::ptrdiff_t>(p + 1) * padded, 0u);
    return panel;
}

const std::uint32_t* pack_a_pairs(bool trans_a, int M, int K, const float* A, int lda, int pairs) {
    std::vector<std::uint32_t>& buffer = a_buffer;
    if (buffer.size() < static_cast<std::size_t>(M) * pairs) buffer.resize(static_cast<std::size_t>(M) * pairs);
    if (!trans_a) pair_rows(A, M, K, lda, buffer.data(), pairs, pairs);
    else interleave_rows(A, M, K, lda, pairs, buffer.data(), M);
    return buffer.data();
}

const std::uint32_t* pack_a_pair_rows(bool trans_a, int M, int K, const float* A, int lda, int pairs, int rows,
                                      int padded) {
    std::vector<std::uint32_t>& buffer = a_buffer;
    const std::size_t out_size = static_cast<std::size_t>(rows) * padded,
                      stored_size = trans_a ? static_cast<std::size_t>(pairs) * M : 0;
    std::uint32_t* out = on_a_line(buffer, out_size + stored_size);
    std::fill(out + static_cast<std::ptrdiff_t>(M) * padded, out + out_size, 0u);
    if (!trans_a) {
        pair_rows(A, M, K, lda, out, pairs, padded);
        return out;
    }
    // A stored (K, M): its pairs (pairs, M), then transposed
    std::uint32_t* stored = out + out_size;
    interleave_rows(A, M, K, lda, pairs, stored, M);
    transpose_words(stored, pairs, M, M, out, padded);
    for (int i = 0; i < M; ++i)
        std::fill(out + static_cast<std::ptrdiff_t>(i) * padded + pairs, out + static_cast<std::ptrdiff_t>(i + 1) * padded, 0u);
    return out;
}

void release_large_pair_buffers() {
    for (std::vector<std::uint32_t>* buffer : {&b_buffer, &a_buffer})
        if (buffer->capacity() > kKeptWords) std::vector<std::uint32_t>().swap(*buffer);
}

}  // namespace xtgrad::detail
