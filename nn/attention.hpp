// The attention arithmetic every tutorial shares, written once (docs/derivations.md#attention):
//
//   scores  = q kᵀ · scale                      q (..., Lq, dk), k (..., Lk, dk)
//   scores  = fill where mask is true            (A: -inf, B and C: -1e9, D bool: -inf)
//   scores += additive                           (D's float masks)
//   weights = softmax(scores, over keys)         (..., Lq, Lk)
//   context = dropout(weights) v                 v (..., Lk, dv) -> (..., Lq, dv)
//
// The tutorials' MultiHeadAttention classes differ in names, projections, where the
// residual and norm go and how masks are spelled; they all call this function.
#pragma once

#include "autograd/ops.hpp"
#include "autograd/random.hpp"

#include <limits>

namespace xtgrad::nn {

struct AttentionResult {
    Tensor context;  // (..., Lq, dv)
    Tensor weights;  // (..., Lq, Lk), after softmax (before dropout)
};

struct AttentionOptions {
    float scale = 1.f;
    const Mask* masked = nullptr;    // true = not attended; broadcasts to (..., Lq, Lk)
    float fill = -std::numeric_limits<float>::infinity();
    const Tensor* additive = nullptr;  // added to the scores; broadcasts to (..., Lq, Lk)
    float dropout = 0.f;
    bool training = false;
    Generator* gen = nullptr;          // default_generator() if null
    const char* who = "scaled_dot_product_attention";  // named in errors (module type and path)
};

AttentionResult scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                             const AttentionOptions& options = {});

// (B, L, h·d) -> (B, h, L, d): view (B, L, h, d), then swap L and h.
Tensor split_heads(const Tensor& x, std::size_t heads);
// (B, h, L, d) -> (B, L, h·d), the inverse.
Tensor merge_heads(const Tensor& x);

}  // namespace xtgrad::nn
