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

// `n` vectors of K values as pairs, zero-padded: (rows, ld) words, word (p, j) of vector j when
// pairs_as_rows (op(B)'s panel), else word (j, p) (AMX's op(A)). The vectors are src's rows
// (k_contiguous: (n, K), row stride ld_src) or its columns ((K, n)). Where the words' order is
// not src's, the pairs are made in src's order first, then transposed.
const std::uint32_t* pack_pairs(std::vector<std::uint32_t>& buffer, bool k_contiguous, int n, int K, const float* src,
                                int ld_src, int pairs, bool pairs_as_rows, int rows, int ld) {
    const int filled_rows = pairs_as_rows ? pairs : n, filled_cols = pairs_as_rows ? n : pairs;
    const bool in_src_order = pairs_as_rows != k_contiguous;
    const std::size_t out_size = static_cast<std::size_t>(rows) * ld,
                      scratch_size = in_src_order ? 0 : static_cast<std::size_t>(n) * pairs;
    std::uint32_t* out = on_a_line(buffer, out_size + scratch_size);
    std::fill(out + static_cast<std::ptrdiff_t>(filled_rows) * ld, out + out_size, 0u);
    if (in_src_order) {  // each row's words zero-padded to ld as they are made
        if (k_contiguous) pair_rows(src, n, K, ld_src, out, pairs, ld);
        else interleave_rows(src, n, K, ld_src, pairs, out, ld);
        return out;
    }
    std::uint32_t* scratch = out + out_size;
    if (k_contiguous) {  // (n, pairs), transposed to (pairs, n): q·kᵀ reads k so
        pair_rows(src, n, K, ld_src, scratch, pairs, pairs);
        transpose_words(scratch, n, pairs, pairs, out, ld);
    } else {  // (pairs, n), transposed to (n, pairs): AMX's op(A) for A stored (K, M)
        interleave_rows(src, n, K, ld_src, pairs, scratch, n);
        transpose_words(scratch, pairs, n, n, out, ld);
    }
    for (int r = 0; r < filled_rows; ++r)
        std::fill(out + static_cast<std::ptrdiff_t>(r) * ld + filled_cols, out + static_cast<std::ptrdiff_t>(r + 1) * ld, 0u);
    return out;
}

}  // namespace

const std::uint32_t* pack_b_pairs(bool trans_b, int N, int K, const float* B, int ldb, int pairs, int rows,
                                  int padded) {
    return pack_pairs(b_buffer, trans_b, N, K, B, ldb, pairs, true, rows, padded);
}

const std::uint32_t* pack_a_pairs(bool trans_a, int M, int K, const float* A, int lda, int pairs) {
    // vdpbf16ps broadcasts op(A)'s words one at a time: in A's stored order, unpadded
    if (a_buffer.size() < static_cast<std::size_t>(M) * pairs) a_buffer.resize(static_cast<std::size_t>(M) * pairs);
    if (!trans_a) pair_rows(A, M, K, lda, a_buffer.data(), pairs, pairs);
    else interleave_rows(A, M, K, lda, pairs, a_buffer.data(), M);
    return a_buffer.data();
}

const std::uint32_t* pack_a_pair_rows(bool trans_a, int M, int K, const float* A, int lda, int pairs, int rows,
                                      int padded) {
    return pack_pairs(a_buffer, !trans_a, M, K, A, lda, pairs, false, rows, padded);
}

void release_large_pair_buffers() {
    for (std::vector<std::uint32_t>* buffer : {&b_buffer, &a_buffer})
        if (buffer->capacity() > kKeptWords) std::vector<std::uint32_t>().swap(*buffer);
}

}  // namespace xtgrad::detail
