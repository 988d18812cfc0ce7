#include <xtgrad/nn/tutorial_d/multihead_attention.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/nn/init.hpp>

namespace xtgrad::nn::tutorial_d {

namespace {
const char* const kMultiheadAttentionType = "MultiheadAttention";
}

MultiheadAttention::MultiheadAttention(std::size_t embed_dim, std::size_t num_heads, float dropout, bool bias,
                                       bool add_bias_kv, bool add_zero_attn, std::size_t kdim, std::size_t vdim,
                                       bool batch_first)
    : MultiheadAttention(MultiheadAttentionOptions(embed_dim, num_heads)
                             .dropout(dropout)
                             .bias(bias)
                             .add_bias_kv(add_bias_kv)
                             .add_zero_attn(add_zero_attn)
                             .kdim(kdim)
                             .vdim(vdim)
                             .batch_first(batch_first)) {}

MultiheadAttention::MultiheadAttention(const MultiheadAttentionOptions& o)
    : options(o),
      embed_dim(o.embed_dim()),
      kdim(o.kdim() ? o.kdim() : o.embed_dim()),
      vdim(o.vdim() ? o.vdim() : o.embed_dim()),
      num_heads(o.num_heads()),
      head_dim(o.num_heads() ? o.embed_dim() / o.num_heads() : 0),
      dropout(o.dropout()),
      batch_first(o.batch_first()),
      add_zero_attn(o.add_zero_attn()) {
    if (embed_dim == 0 || num_heads == 0)
        module_error(*this, kMultiheadAttentionType, fmt::format("embed_dim and num_heads must be greater than 0, got embed_dim={} and "
                                               "num_heads={}", embed_dim, num_heads));
    if (head_dim * num_heads != embed_dim)
        module_error(*this, kMultiheadAttentionType, fmt::format("embed_dim must be divisible by num_heads, got embed_dim={} and "
                                               "num_heads={}", embed_dim, num_heads));
    if (!(dropout >= 0.f && dropout <= 1.f))
        module_error(*this, kMultiheadAttentionType, fmt::format("dropout must be in [0, 1], got {}", dropout));

    const std::size_t E = embed_dim;
    // torch's order of draws: out_proj (a Linear) draws its default init in __init__, then
    // _reset_parameters draws xavier_uniform_ for the projection weights, zeroes the biases and
    // draws xavier_normal_ for bias_k and bias_v.
    if (qkv_same_embed_dim()) {
        in_proj_weight = register_parameter("in_proj_weight", Tensor::zeros({3 * E, E}));
    } else {
        q_proj_weight = register_parameter("q_proj_weight", Tensor::zeros({E, E}));
        k_proj_weight = register_parameter("k_proj_weight", Tensor::zeros({E, kdim}));
        v_proj_weight = register_parameter("v_proj_weight", Tensor::zeros({E, vdim}));
    }
    if (o.bias()) in_proj_bias = register_parameter("in_proj_bias", Tensor::zeros({3 * E}));
    if (o.add_bias_kv()) {
        bias_k = register_parameter("bias_k", Tensor::zeros({1, 1, E}));
        bias_v = register_parameter("bias_v", Tensor::zeros({1, 1, E}));
    }
    out_proj = register_module("out_proj", std::make_shared<Linear>(E, E, o.bias()));
    if (qkv_same_embed_dim())
        init::xavier_uniform_(in_proj_weight);  // fans of the packed (3E, E) matrix, as torch
    else
        for (Tensor* w : {&q_proj_weight, &k_proj_weight, &v_proj_weight}) init::xavier_uniform_(*w);
    if (o.bias()) init::constant_(out_proj->bias, 0.f);
    if (o.add_bias_kv())
        for (Tensor* b : {&bias_k, &bias_v}) init::xavier_normal_(*b);
}

MultiheadAttention::Output MultiheadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                                       const AttentionMask& key_padding_mask, bool need_weights,
                                                       const AttentionMask& attn_mask,
                                                       bool average_attn_weights) const {
    auto scope = enter(query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights);
    // The widths the functional cannot know: it sees only the weights.
    if (key.defined() && key.dim() >= 2 && key.size(-1) != kdim)
        module_error(*this, kMultiheadAttentionType, fmt::format("key {} must end in kdim {}", shape_str(key.shape()), kdim));
    if (value.defined() && value.dim() >= 2 && value.size(-1) != vdim)
        module_error(*this, kMultiheadAttentionType, fmt::format("value {} must end in vdim {}", shape_str(value.shape()), vdim));
    const std::string who = path().empty() ? kMultiheadAttentionType : fmt::format("{} '{}'", kMultiheadAttentionType, path());
    return scope.output(multi_head_attention_forward(
        query, key, value,
        MultiheadAttentionForwardFuncOptions(embed_dim, num_heads, in_proj_weight, in_proj_bias, bias_k, bias_v,
                                             add_zero_attn, dropout, out_proj->weight, out_proj->bias)
            .training(is_training())
            .key_padding_mask(key_padding_mask)
            .need_weights(need_weights)
            .attn_mask(attn_mask)
            .use_separate_proj_weight(!qkv_same_embed_dim())
            .q_proj_weight(q_proj_weight)
            .k_proj_weight(k_proj_weight)
            .v_proj_weight(v_proj_weight)
            .average_attn_weights(average_attn_weights)
            .batch_first(batch_first)
            .who(who)));
}

}  // namespace xtgrad::nn::tutorial_d
