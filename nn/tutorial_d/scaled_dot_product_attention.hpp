// Tutorial D, "点积注意力": _scaled_dot_product_attention(q, k, v, attn_mask, dropout_p).
//
//   q     = q / sqrt(E)                  E = q's last dim (the head dim inside MultiheadAttention)
//   attn  = softmax(q kᵀ + attn_mask)    over the keys; a boolean mask fills -inf instead
//   attn  = dropout(attn)                training only
//   out   = attn v                       returns out and attn: the weights after dropout, as torch
//
// q is scaled by 1/sqrt(E) before the product, as torch does, rather than the scores after
// it (the two differ in the last bit only). The arithmetic itself is xtgrad's one attention function
// (nn/attention.hpp); this wrapper fixes D's scale and mask conventions.
//
// The tutorial calls F.dropout(attn, p) whose `training` defaults to True, so the function
// alone would drop at inference too; MultiheadAttention passes p = 0 outside training.
// Here dropout runs only when `training` is true.
#pragma once

#include <xtgrad/random/random.hpp>
#include <xtgrad/nn/attention.hpp>
#include <xtgrad/nn/tutorial_d/attention_mask.hpp>

namespace xtgrad::nn::tutorial_d {

// q (..., Lq, E), k (..., Lk, E), v (..., Lk, Ev); attn_mask broadcasts to (..., Lq, Lk).
// Returns the output (..., Lq, Ev) and the weights (..., Lq, Lk) the output was computed with
// (after dropout in training: zeros where dropped, the rest scaled by 1/(1-p)); without
// need_weights the weights may be left undefined (AttentionOptions::need_weights).
AttentionResult scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                             const AttentionMask& attn_mask = {}, float dropout_p = 0.f,
                                             bool training = false, Generator* gen = nullptr,
                                             const char* who = "tutorial_d::scaled_dot_product_attention",
                                             bool need_weights = true);

}  // namespace xtgrad::nn::tutorial_d
