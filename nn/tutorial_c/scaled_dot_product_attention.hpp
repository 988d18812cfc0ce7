// Tutorial C, "4. 代码实现": class ScaledDotProductAttention.
//
//   scores = Q Kᵀ / sqrt(d_k)                 Q (B, h, Lq, d_k), K (B, h, Lk, d_k)
//   scores.masked_fill_(attn_mask, -1e9)      attn_mask (B, h, Lq, Lk), True = masked
//   attn    = softmax(scores, dim=-1)         (B, h, Lq, Lk)
//   context = attn V                          V (B, h, Lk, d_v) -> (B, h, Lq, d_v)
//
// d_k is the tutorial's global d_k (a constructor argument here), which need not be
// d_model / n_heads. The finite -1e9 fill gives a fully masked row uniform weights, not NaN.
// The arithmetic is xtgrad's one attention function (nn/attention.hpp).
#pragma once

#include <xtgrad/nn/attention.hpp>
#include <xtgrad/nn/module.hpp>
#include <xtgrad/nn/options.hpp>

namespace xtgrad::nn::tutorial_c {

// ScaledDotProductAttentionOptions(64): the lesson's global d_k.
class ScaledDotProductAttentionOptions {
public:
    explicit ScaledDotProductAttentionOptions(std::size_t d_k) : d_k_(d_k) {}
    XTGRAD_ARG(std::size_t, d_k);
};

class ScaledDotProductAttention : public Module {
public:
    XTGRAD_OPTIONS_CONSTRUCTORS(ScaledDotProductAttention);
    // -> {context (B, h, Lq, d_v), weights = attn (B, h, Lq, Lk)}
    AttentionResult forward(const Tensor& Q, const Tensor& K, const Tensor& V, const Mask& attn_mask) const;

    std::size_t d_k;
};

}  // namespace xtgrad::nn::tutorial_c
