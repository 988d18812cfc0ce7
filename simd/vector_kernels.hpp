// xtgrad's own SIMD kernels, compiled for the build's baseline (AVX2 + FMA) and for AVX-512, the
// set chosen at run time (simd/cpu_isa.hpp). Each call goes to the active set's version.
//
// Both versions do the same operations in the same order per element; they differ only in how
// many lanes a reduction sums at once (8 or 16), so a sum may differ in its last bits.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xtgrad::vec {

// The largest of x[0, n) that is not NaN; -inf if there is none (or n = 0). Exact: either set
// gives the same value.
float max_value(const float* x, std::size_t n);

// Σ_k a[k] · b[k] over [0, n): fused multiply-adds per lane in float, lanes added in double.
double dot(const float* a, const float* b, std::size_t n);

// Σ_k exp(x[k] - shift) over a contiguous row x[0, n), each exp also written to y[k] when
// `store` (softmax's numerator). Summed per lane in float, lanes added in double.
double exp_shifted_sum(const float* x, float* y, std::size_t n, float shift, bool store);

// The scalars of one parameter's Adam step (optim/optimizer.cpp computes them).
struct AdamCoefficients {
    float b1, one_minus_b1, b2, one_minus_b2, l2, decay, step_size, inv_sqrt_bc2, eps;
};

// One fused, in-place Adam pass over n elements:
//   g = grad + l2·w;  m = β1 m + (1-β1) g;  v = β2 v + (1-β2) g²
//   w = w·decay - step_size · m / (sqrt(v) · inv_sqrt_bc2 + eps)
// prefetch_bytes > 0: software-prefetch w, g, m and v that far ahead (the same bits; a memory hint
// for one thread streaming alone: Adam::step_parameter's comment has the measurements).
inline constexpr std::size_t kAdamPrefetchBytes = 2048;  // what Adam::step_parameter asks for on one thread
void adam_update(const AdamCoefficients& c, float* w, const float* g, float* m, float* v, std::size_t n,
                 std::size_t prefetch_bytes = 0);

// A (rows, cols) gradient given as the product of two thin factors, over an inner dimension
// rank <= kMaxGradientRank (a weight's gradient over 7 tokens, dW = dyᵀ·x):
//   grad[r][n] = Σ_k a[r·a_row + k·a_rank] · b[k·b_rank + n·b_col]
// summed as the skinny_tn kernels sum a stored one (gemm/skinny_avx512.cpp, skinny_gemm.cpp): k = 0's
// product, then one multiply-add per k in k order, so an update on it has that kernel's bits.
inline constexpr int kMaxGradientRank = 7;
struct RankKGradient {
    std::size_t rows, cols;
    int rank;
    const float* a;
    std::ptrdiff_t a_row, a_rank;
    const float* b;
    std::ptrdiff_t b_rank, b_col;
};

// adam_update on rows [row0, row1) of a (g.rows, g.cols) parameter whose gradient is g, made a
// row at a time from its factors and never stored (Adam::step_parameter_product): the gradient's
// write and read are gone, its multiply-adds hide under the update's memory time. The factor b
// is copied once per call into an aligned, zero-padded panel (rank x cols floats, the row tails'
// lanes), which each row reads again: where it outgrows L1 (adam_update_product_pays false) the
// stored gradient was faster (Zen 5, 44 weights' dW and update against this: (2048, 512) 0.93x
// the stored path's time, (512, 512) 0.96x, (512, 2048) 1.03-1.06x, also four rows per pass).
void adam_update_product(const AdamCoefficients& c, float* w, float* m, float* v, const RankKGradient& g,
                         std::size_t row0, std::size_t row1, std::size_t prefetch_bytes = 0);
inline constexpr std::size_t kMaxProductPanelBytes = 32 * 1024;
inline bool adam_update_product_pays(const RankKGradient& g) {
    return static_cast<std::size_t>(g.rank) * g.cols * sizeof(float) <= kMaxProductPanelBytes;
}

// The random draws' integer loops (random/mt19937.cpp, random/random.cpp): the same bits in either
// set, ~1.7x (the Twister) and ~6x (bernoulli_bytes) faster with AVX-512's 16 lanes and its
// unsigned 64-bit compares (dropout draws two words per element: seed-d's forward draws ~42 M).
//   mt_twist         state: (624,) the Mersenne Twister's words, rewritten in place into the next block
//   mt_temper        out[i] = the tempering of x[i], i < n: the numbers the block gives
//   bernoulli_bytes  out[k] = r_k < bound, r_k = (words[2k] & 0x1FFFFF) · 2^32 + words[2k + 1], k < m:
//                    torch's bernoulli_ on the 53 low bits of a random64 (high word first)
void mt_twist(std::uint32_t* state);
void mt_temper(const std::uint32_t* x, std::size_t n, std::uint32_t* out);
void bernoulli_bytes(const std::uint32_t* words, std::size_t m, std::uint64_t bound, std::uint8_t* out);

}  // namespace xtgrad::vec
