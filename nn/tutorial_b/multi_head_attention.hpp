// Tutorial B, "多头注意力机制": class MultiHeadAttention(d_model, num_heads).
//
//   Q, K, V   = W_q(Q), W_k(K), W_v(V), each split_heads: (B, L, d) -> (B, h, L, d_k), d_k = d / h
//   scores    = Q Kᵀ / sqrt(d_k), masked_fill(mask == 0, -1e9)
//   output    = W_o(combine_heads(softmax(scores) V))                              (B, Lq, d)
// No residual and no norm here: B's EncoderLayer/DecoderLayer add them outside.
//
// Masks keep B's convention, True = keep (the opposite of tutorials A and C): generate_mask
// gives src_mask (B, 1, 1, Lk) and tgt_mask (B, 1, Lq, Lq); any 4-D bool mask that
// broadcasts to the scores (B, h, Lq, Lk) is accepted. The finite -1e9 fill means a row
// whose keys are all masked gets uniform weights rather than NaN (B's tgt_mask masks padded
// query rows entirely, docs/tutorial_b.md).
//
// The tutorial's code is right as written; xtgrad adds the checks it leaves to asserts and
// broadcasting errors (d_model divisible by num_heads, input and mask shapes).
#pragma once

#include <xtgrad/nn/attention.hpp>
#include <xtgrad/nn/layers.hpp>
#include <xtgrad/nn/module.hpp>
#include <xtgrad/nn/options.hpp>

#include <memory>

namespace xtgrad::nn::tutorial_b {

// MultiHeadAttentionOptions(512, 8)
class MultiHeadAttentionOptions {
public:
    MultiHeadAttentionOptions(std::size_t d_model, std::size_t num_heads) : d_model_(d_model), num_heads_(num_heads) {}
    XTGRAD_ARG(std::size_t, d_model);    // the model width, split into num_heads heads of d_model / num_heads
    XTGRAD_ARG(std::size_t, num_heads);  // must divide d_model
};

class MultiHeadAttention : public Module {
public:
    XTGRAD_OPTIONS_CONSTRUCTORS(MultiHeadAttention);

    // Q (B, Lq, d), K and V (B, Lk, d); mask (4-D, True = keep) -> (B, Lq, d).
    Tensor forward(const Tensor& Q, const Tensor& K, const Tensor& V, const Mask& mask) const;
    Tensor forward(const Tensor& Q, const Tensor& K, const Tensor& V) const;  // mask=None

    // The tutorial's helpers, under its names.
    // Q, K, V (B, h, L, d_k); mask may be null -> context (B, h, Lq, d_k).
    Tensor scaled_dot_product_attention(const Tensor& Q, const Tensor& K, const Tensor& V, const Mask* mask) const;
    Tensor split_heads(const Tensor& x) const;    // (B, L, d) -> (B, h, L, d_k)
    Tensor combine_heads(const Tensor& x) const;  // (B, h, L, d_k) -> (B, L, d)

    std::size_t d_model, num_heads, d_k;
    std::shared_ptr<Linear> W_q, W_k, W_v, W_o;

    // The tutorial's forward returns the context only, so its attention weights are gone by the
    // time a learner wants to look at them. With keep_attention_weights(true), every forward keeps
    // the weights it computed, detached, (B, h, Lq, Lk) after softmax (before dropout), for a
    // heatmap or a run report; off (the default), forward keeps nothing and attention_weights()
    // is undefined. Keeping them costs the (B, h, Lq, Lk) array and the fused op's saving.
    void keep_attention_weights(bool on);
    const Tensor& attention_weights() const { return kept_weights_; }

private:
    bool keep_weights_ = false;
    mutable Tensor kept_weights_;  // written by the const forward: what it saw, not the module's state

    Tensor attend(const Tensor& Q, const Tensor& K, const Tensor& V, const Mask* mask) const;
    AttentionOptions attention_options(const Mask* mask, Mask& masked_out) const;
    void check_inputs(const Tensor& Q, const Tensor& K, const Tensor& V, const Mask* mask) const;
};

}  // namespace xtgrad::nn::tutorial_b
