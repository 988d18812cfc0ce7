// op(A) and op(B) of a bf16 product packed as pairs along K: the layout AVX512-BF16's vdpbf16ps
// and AMX's TDPBF16PS both multiply (gemm/small_gemm_bf16.cpp, gemm/small_gemm_amx.cpp). A word
// holds two bf16 values, the even k in its low half:
//   op(A) (M, K) -> word (i, p) = (A(i, 2p), A(i, 2p + 1))
//   op(B) (K, N) -> word (p, j) = (B(2p, j), B(2p + 1, j)), the "VNNI" layout
// An odd K gets a zero in its last pair. Values are rounded as detail::bf16_row rounds them
// (gemm/bf16_convert.hpp). Each function returns this thread's buffer (one for op(A), one for
// op(B)), valid until the next call or release_large_pair_buffers. Not for signal handlers: a
// handler's product would pack over the interrupted one's operands.
// Compiled with AVX512-BF16 only (meson.build); internal.
#pragma once

#include <cstdint>

namespace xtgrad::detail {

// op(B)'s pairs, (rows, padded) words, row p at p · padded: word (p, j) for p < pairs (K / 2
// rounded up) and j < N, zeros elsewhere (rows >= pairs, padded >= N). B is stored (K, N), or
// (N, K) when trans_b. The buffer starts on a cache line.
const std::uint32_t* pack_b_pairs(bool trans_b, int N, int K, const float* B, int ldb, int pairs, int rows,
                                  int padded);

// op(A)'s pairs as vdpbf16ps's kernel broadcasts them: (M, pairs) words for A stored (M, K),
// (pairs, M) for A stored (K, M) (trans_a), each packed where it is cheapest.
const std::uint32_t* pack_a_pairs(bool trans_a, int M, int K, const float* A, int lda, int pairs);

// op(A)'s pairs as AMX loads them: (rows, padded) words, row i at i · padded, word (i, p) for
// i < M and p < pairs, zeros elsewhere, whether A is stored (M, K) or (K, M) (trans_a). The
// buffer starts on a cache line.
const std::uint32_t* pack_a_pair_rows(bool trans_a, int M, int K, const float* A, int lda, int pairs, int rows,
                                      int padded);

// Frees this thread's buffers where they grew past 4 MiB (a direct call on a huge product: 1e6
// rows kept up to 0.5 GB per thread), after a kernel is done with them; the medium blocks'
// stay for the next call.
void release_large_pair_buffers();

}  // namespace xtgrad::detail
