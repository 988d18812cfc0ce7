// Tutorial A, "Scaled dot-product attention的实现": class ScaledDotProductAttention.
//
//   attention = bmm(q, kᵀ) · scale            q (B*, Lq, dk), k (B*, Lk, dk)
//   attention = masked_fill(mask, -inf)       mask (B*, Lq, Lk), true = not attended
//   attention = softmax(attention, dim=2)
//   context   = bmm(dropout(attention), v)    v (B*, Lk, dv) -> (B*, Lq, dv)
//
// The arithmetic is nn::scaled_dot_product_attention's; this class keeps the tutorial's
// call signature forward(q, k, v, scale, attn_mask) and its pair of results.
//
// Erratum: the notebook tests `if attn_mask:`, which PyTorch rejects for a mask of more
// than one element ("Boolean value of Tensor ... is ambiguous"). The intent, and what xtgrad
// does, is to apply the mask whenever one is given. `if scale:` is kept: a scale of 0 means
// "no scaling". A query whose keys are all masked would get NaN weights in PyTorch (softmax
// of a row of -inf); xtgrad's softmax refuses such a row with an Error naming it. A's masks
// always leave every query at least one key (the first token is never PAD).
// The returned attention is the softmax before dropout (the notebook returns it after;
// they coincide at dropout 0, the notebook's default).
#pragma once

#include <xtgrad/nn/attention.hpp>
#include <xtgrad/nn/module.hpp>
#include <xtgrad/nn/options.hpp>

namespace xtgrad::nn::tutorial_a {

// ScaledDotProductAttentionOptions().attention_dropout(0.1f)
class ScaledDotProductAttentionOptions {
    XTGRAD_ARG(float, attention_dropout) = 0.f;
};

class ScaledDotProductAttention : public Module {
public:
    explicit ScaledDotProductAttention(const ScaledDotProductAttentionOptions& o);
    explicit ScaledDotProductAttention(float attention_dropout = 0.f)
        : ScaledDotProductAttention(ScaledDotProductAttentionOptions().attention_dropout(attention_dropout)) {}

    // Returns {context (B*, Lq, dv), attention (B*, Lq, Lk)}. scale 0 = none; attn_mask may be null.
    AttentionResult forward(const Tensor& q, const Tensor& k, const Tensor& v, float scale = 0.f,
                            const Mask* attn_mask = nullptr) const;

    float attention_dropout;
};

}  // namespace xtgrad::nn::tutorial_a
