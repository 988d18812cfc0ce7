// torch.nn.MultiheadAttention — tutorial D, "多头注意力" (初始化参数, multi_head_attention_forward,
// _in_projection_packed, 遮挡机制) and "完整的多头注意力机制-MultiheadAttention".
//
// Parameters, with torch's names (their order is torch's state_dict order):
//   in_proj_weight (3E, E)   rows 0:E project q, E:2E k, 2E:3E v          when kdim = vdim = E
//   q_proj_weight (E, E), k_proj_weight (E, kdim), v_proj_weight (E, vdim) otherwise
//   in_proj_bias (3E)        q, k, v blocks; absent without bias
//   bias_k, bias_v (1, 1, E) with add_bias_kv: a learned key and value appended to every sequence
//   out_proj                 Linear(E, E) (out_proj.weight, out_proj.bias)
// Initialisation as torch: xavier_uniform_ on the projection weights, zero biases,
// out_proj.weight as a default Linear, xavier_normal_ on bias_k and bias_v.
// add_zero_attn appends a key and value of zeros (after bias_k / bias_v).
//
// forward is F.multi_head_attention_forward (nn/tutorial_d/functional.hpp) on these
// parameters, as torch's module is.
//
// forward(query, key, value), sequence-first (L, N, E) unless batch_first:
//   q, k, v = the in-projections of query, key, value
//   heads   : (L, N, E) -> (N·h, L, E/h), batch-head index n·h + head
//   q       = q / sqrt(E/h)
//   weights = softmax(q kᵀ + masks), output = out_proj(merge_heads(dropout(weights) v))
// returns attn_output (Lq, N, E) and, with need_weights, the weights averaged over the
// heads (N, Lq, Lk) (or per head, (N, h, Lq, Lk), without average_attn_weights).
//
// Masks (AttentionMask: boolean true = masked, or additive float):
//   attn_mask          (Lq, Lk) for every batch item and head, or (N·h, Lq, Lk), row n·h + head
//   key_padding_mask   (N, Lk): masks keys (padding) for every query and head
// Both given: OR-ed if boolean, otherwise the boolean one becomes -inf in the float one.
// Dropout on the weights runs in training mode only.
//
// Errata (docs/tutorial_d.md): with kdim/vdim != E the tutorial passes
// use_separate_proj_weight=True to a function whose parameter is spelled
// use_seperate_proj_weight and has no separate-weight branch, so that case cannot run;
// xtgrad projects with q/k/v_proj_weight there, as torch does. Its second listing of the
// mask checks indents attn_mask.unsqueeze(0) under the raise, so it never runs; xtgrad
// broadcasts a 2-D mask after the shape check passes.
#pragma once

#include <xtgrad/nn/layers.hpp>
#include <xtgrad/nn/module.hpp>
#include <xtgrad/nn/tutorial_d/attention_mask.hpp>
#include <xtgrad/nn/tutorial_d/functional.hpp>
#include <xtgrad/nn/options.hpp>

#include <memory>

namespace xtgrad::nn::tutorial_d {

// torch's MultiheadAttention(embed_dim, num_heads, dropout=0., bias=True, add_bias_kv=False,
// add_zero_attn=False, kdim=None, vdim=None, batch_first=False): required sizes in the
// constructor, the keywords as setters. kdim / vdim 0 mean embed_dim (torch's None).
class MultiheadAttentionOptions {
public:
    MultiheadAttentionOptions(std::size_t embed_dim, std::size_t num_heads)
        : embed_dim_(embed_dim), num_heads_(num_heads) {}

    XTGRAD_ARG(std::size_t, embed_dim);
    XTGRAD_ARG(std::size_t, num_heads);
    XTGRAD_ARG(float, dropout) = 0.f;
    XTGRAD_ARG(bool, bias) = true;
    XTGRAD_ARG(bool, add_bias_kv) = false;
    XTGRAD_ARG(bool, add_zero_attn) = false;
    XTGRAD_ARG(std::size_t, kdim) = 0;
    XTGRAD_ARG(std::size_t, vdim) = 0;
    XTGRAD_ARG(bool, batch_first) = false;
};

class MultiheadAttention : public Module {
public:
    explicit MultiheadAttention(const MultiheadAttentionOptions& options);
    // torch's positional arguments, in torch's order.
    MultiheadAttention(std::size_t embed_dim, std::size_t num_heads, float dropout = 0.f, bool bias = true,
                       bool add_bias_kv = false, bool add_zero_attn = false, std::size_t kdim = 0, std::size_t vdim = 0,
                       bool batch_first = false);

    using Output = MultiheadAttentionOutput;  // attn_output, attn_output_weights

    // query (Lq, N, E), key (Lk, N, kdim), value (Lk, N, vdim); (N, L, ·) if batch_first.
    // attn_output (Lq, N, E) (or batch first); attn_output_weights (N, Lq, Lk') averaged over
    // the heads, (N, h, Lq, Lk') without average_attn_weights, undefined without need_weights;
    // Lk' = Lk + 1 with add_bias_kv, + 1 more with add_zero_attn.
    Output forward(const Tensor& query, const Tensor& key, const Tensor& value,
                   const AttentionMask& key_padding_mask = {}, bool need_weights = true,
                   const AttentionMask& attn_mask = {}, bool average_attn_weights = true) const;

    bool qkv_same_embed_dim() const { return kdim == embed_dim && vdim == embed_dim; }

    MultiheadAttentionOptions options;
    std::size_t embed_dim, kdim, vdim, num_heads, head_dim;
    float dropout;
    bool batch_first, add_zero_attn;
    Tensor in_proj_weight;                              // undefined unless qkv_same_embed_dim()
    Tensor q_proj_weight, k_proj_weight, v_proj_weight;  // defined only if !qkv_same_embed_dim()
    Tensor in_proj_bias;                                // undefined without bias
    Tensor bias_k, bias_v;                              // (1, 1, E), defined only with add_bias_kv
    std::shared_ptr<Linear> out_proj;
};

}  // namespace xtgrad::nn::tutorial_d
