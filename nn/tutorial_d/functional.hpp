// Tutorial D's subject: torch.nn.functional's attention core (torch 1.13), as free functions
// with torch's argument names and semantics. MultiheadAttention is a thin module over them,
// as torch's is over F.multi_head_attention_forward.
//
//   in_projection_packed(q, k, v, w, b)     _in_projection_packed: w (3E, E) packs the q, k, v rows
//   in_projection(q, k, v, w_q, w_k, w_v, b_q, b_k, b_v)    _in_projection: three separate weights
//   multi_head_attention_forward(query, key, value, options)  the whole forward:
//     1. in-projection (packed, or separate weights with use_separate_proj_weight)
//     2. attn_mask checked: (L, S) for every batch item and head, or (N·num_heads, L, S)
//     3. bias_k / bias_v (1, 1, E) appended to k and v as one more key (masks padded with a kept column)
//     4. heads: (L, N, E) -> (N, h, L, E/h), torch's batch-head row n·h + head; static_k / static_v
//        (N·h, S, E/h) replace the projected k / v
//     5. add_zero_attn: one more key and value of zeros (masks padded again)
//     6. key_padding_mask (N, S) merged into attn_mask (OR-ed, or -inf into a float mask)
//     7. softmax(q kᵀ / sqrt(E/h) + mask), dropout (training only), · v, heads merged, out_proj
//     8. weights (N, L, S) averaged over the heads, or per head (N, h, L, S)
//
// Inputs are sequence-first (L, N, E), as torch's function; batch_first(true) is xtgrad's
// addition so the module's batch-first input reaches the function without two transposes.
// Unbatched inputs, as torch 1.13 (_mha_shape_check): query (L, E), key (S, kdim), value (S, vdim),
// key_padding_mask (S), attn_mask (L, S) or (num_heads, L, S) run with a batch axis of 1 and give
// attn_output (L, E) and weights (L, S), or (num_heads, L, S) per head.
// 7. returns the weights the output was computed with: after dropout in training, as torch.
#pragma once

#include <xtgrad/random/random.hpp>
#include <xtgrad/autograd/tensor.hpp>
#include <xtgrad/nn/tutorial_d/attention_mask.hpp>
#include <xtgrad/nn/options.hpp>

#include <string>

namespace xtgrad::nn::tutorial_d {

struct InProjection {
    Tensor q, k, v;  // each of its input's shape, with last dim E
};

// torch.nn.functional._in_projection_packed. q (..., E), k (..., E), v (..., E); w (3E, E),
// rows 0:E project q, E:2E k, 2E:3E v; b (3E) or undefined. torch makes one product with the
// whole w when q, k and v are one tensor (self-attention) and chunks it into three, one with
// w[E:3E] when k and v are one tensor (encoder-decoder attention), three otherwise; xtgrad
// always makes three, each with its own row block read in place (linear_rows): the same dot
// products, without the chunk's and narrow's copies.
InProjection in_projection_packed(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& w,
                                  const Tensor& b = Tensor(), const std::string& who = "_in_projection_packed");

// torch.nn.functional._in_projection. q (..., Eq), k (..., Ek), v (..., Ev); w_q (Eq, Eq),
// w_k (Eq, Ek), w_v (Eq, Ev); biases (Eq) or undefined. Every output ends in Eq.
InProjection in_projection(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& w_q, const Tensor& w_k,
                           const Tensor& w_v, const Tensor& b_q = Tensor(), const Tensor& b_k = Tensor(),
                           const Tensor& b_v = Tensor(), const std::string& who = "_in_projection");

// The arguments of F.multi_head_attention_forward after query, key and value: the ten torch
// takes positionally are the constructor's, the keyword ones are setters (torch's C++
// frontend: MultiheadAttentionForwardFuncOptions). Undefined tensors are torch's None.
class MultiheadAttentionForwardFuncOptions {
public:
    MultiheadAttentionForwardFuncOptions(std::size_t embed_dim_to_check, std::size_t num_heads, Tensor in_proj_weight,
                                         Tensor in_proj_bias, Tensor bias_k, Tensor bias_v, bool add_zero_attn,
                                         float dropout_p, Tensor out_proj_weight, Tensor out_proj_bias);

    XTGRAD_ARG(std::size_t, embed_dim_to_check);
    XTGRAD_ARG(std::size_t, num_heads);
    XTGRAD_ARG(Tensor, in_proj_weight);
    XTGRAD_ARG(Tensor, in_proj_bias);
    XTGRAD_ARG(Tensor, bias_k);
    XTGRAD_ARG(Tensor, bias_v);
    XTGRAD_ARG(bool, add_zero_attn);
    XTGRAD_ARG(float, dropout_p);
    XTGRAD_ARG(Tensor, out_proj_weight);
    XTGRAD_ARG(Tensor, out_proj_bias);
    XTGRAD_ARG(bool, training) = true;
    XTGRAD_ARG(AttentionMask, key_padding_mask);
    XTGRAD_ARG(bool, need_weights) = true;
    XTGRAD_ARG(AttentionMask, attn_mask);
    XTGRAD_ARG(bool, use_separate_proj_weight) = false;
    XTGRAD_ARG(Tensor, q_proj_weight);
    XTGRAD_ARG(Tensor, k_proj_weight);
    XTGRAD_ARG(Tensor, v_proj_weight);
    XTGRAD_ARG(Tensor, static_k);
    XTGRAD_ARG(Tensor, static_v);
    XTGRAD_ARG(bool, average_attn_weights) = true;
    // xtgrad's additions: the layout of query/key/value and the output, the dropout's
    // generator (null: default_generator()), and who errors name (a module passes its type and path).
    XTGRAD_ARG(bool, batch_first) = false;
    XTGRAD_ARG(Generator*, generator) = nullptr;
    XTGRAD_ARG(std::string, who) = "multi_head_attention_forward";
};

struct MultiheadAttentionOutput {
    Tensor attn_output;          // (L, N, E), or (N, L, E) with batch_first
    Tensor attn_output_weights;  // (N, L, S) averaged over heads, (N, h, L, S) per head; undefined without need_weights;
                                 // after dropout in training (zeros where dropped, the rest scaled by 1/(1-p))
};

// query (L, N, E), key (S, N, kdim), value (S, N, vdim) (kdim = vdim = E unless
// use_separate_proj_weight). S counts the keys given; bias_k and add_zero_attn each add one.
MultiheadAttentionOutput multi_head_attention_forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                                      const MultiheadAttentionForwardFuncOptions& options);

// The same with torch's positional arguments, as the tutorial calls it (up to attn_mask).
MultiheadAttentionOutput multi_head_attention_forward(
    const Tensor& query, const Tensor& key, const Tensor& value, std::size_t embed_dim_to_check,
    std::size_t num_heads, const Tensor& in_proj_weight, const Tensor& in_proj_bias, const Tensor& bias_k,
    const Tensor& bias_v, bool add_zero_attn, float dropout_p, const Tensor& out_proj_weight,
    const Tensor& out_proj_bias, bool training = true, const AttentionMask& key_padding_mask = {},
    bool need_weights = true, const AttentionMask& attn_mask = {});

}  // namespace xtgrad::nn::tutorial_d
