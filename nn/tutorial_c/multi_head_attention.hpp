// Tutorial C, "4. 代码实现": class MultiHeadAttention (with its residual and LayerNorm inside).
//
//   q_s = W_Q(Q) split into heads        (B, Lq, d) -> (B, h, Lq, d_k)
//   k_s = W_K(K), v_s = W_V(V)           (B, h, Lk, d_k), (B, h, Lk, d_v)
//   attn_mask (B, Lq, Lk) repeated over the heads -> (B, h, Lq, Lk)
//   context, attn = ScaledDotProductAttention(q_s, k_s, v_s, mask)
//   output = layer_norm(linear(combine(context)) + Q)          (B, Lq, d), Q is the residual
//
// Returns {output, attn}: attn (B, h, Lq, Lk) are the weights the tutorial's showgraph plots.
// d_k and d_v are the tutorial's globals (64 and 64 with d_model 512, n_heads 8) and are
// independent of d_model / n_heads: W_Q is Linear(d_model, d_k·n_heads), W_V
// Linear(d_model, d_v·n_heads), linear Linear(n_heads·d_v, d_model).
// State: W_Q.*, W_K.*, W_V.*, linear.*, layer_norm.* (torch LayerNorm, eps 1e-5).
// attn_mask is bool, True = masked (C's convention), built by get_attn_pad_mask and
// get_dec_self_attn_mask (masks.hpp).
#pragma once

#include <xtgrad/nn/layers.hpp>
#include <xtgrad/nn/options.hpp>
#include <xtgrad/nn/module.hpp>
#include <xtgrad/nn/tutorial_c/scaled_dot_product_attention.hpp>

#include <memory>

namespace xtgrad::nn::tutorial_c {

struct MultiHeadAttentionOutput {
    Tensor output;  // (B, Lq, d_model)
    Tensor attn;    // (B, n_heads, Lq, Lk)
};

// MultiHeadAttentionOptions(512, 8, 64, 64): the lesson's globals d_model, n_heads, d_k, d_v
// (d_k and d_v need not be d_model / n_heads).
class MultiHeadAttentionOptions {
public:
    MultiHeadAttentionOptions(std::size_t d_model, std::size_t n_heads, std::size_t d_k, std::size_t d_v)
        : d_model_(d_model), n_heads_(n_heads), d_k_(d_k), d_v_(d_v) {}
    XTGRAD_ARG(std::size_t, d_model);
    XTGRAD_ARG(std::size_t, n_heads);
    XTGRAD_ARG(std::size_t, d_k);
    XTGRAD_ARG(std::size_t, d_v);
};

class MultiHeadAttention : public Module {
public:
    XTGRAD_OPTIONS_CONSTRUCTORS(MultiHeadAttention);

    // Q (B, Lq, d), K and V (B, Lk, d), attn_mask (B, Lq, Lk) True = masked.
    MultiHeadAttentionOutput forward(const Tensor& Q, const Tensor& K, const Tensor& V, const Mask& attn_mask) const;

    std::size_t d_model, n_heads, d_k, d_v;
    std::shared_ptr<Linear> W_Q, W_K, W_V, linear;
    std::shared_ptr<LayerNorm> layer_norm;

private:
    void check_inputs(const Tensor& Q, const Tensor& K, const Tensor& V, const Mask& attn_mask) const;
    // The tutorial builds ScaledDotProductAttention() inline in forward, so it is not a
    // registered child (it has no state either way).
    ScaledDotProductAttention attention_;
};

}  // namespace xtgrad::nn::tutorial_c
