#include "nn/tutorial_d/multihead_attention.hpp"

#include "autograd/error.hpp"
#include "autograd/ops.hpp"
#include "nn/attention.hpp"
#include "nn/init.hpp"
#include "nn/tutorial_d/scaled_dot_product_attention.hpp"

namespace xtgrad::nn::tutorial_d {

namespace {
const char* const kType = "MultiheadAttention";
}

MultiheadAttention::MultiheadAttention(std::size_t embed_dim, std::size_t num_heads, float dropout, bool bias,
                                       std::size_t kdim, std::size_t vdim, bool batch_first)
    : embed_dim(embed_dim),
      kdim(kdim ? kdim : embed_dim),
      vdim(vdim ? vdim : embed_dim),
      num_heads(num_heads),
      head_dim(num_heads ? embed_dim / num_heads : 0),
      dropout(dropout),
      batch_first(batch_first) {
    if (embed_dim == 0 || num_heads == 0)
        module_error(*this, kType, fmt::format("embed_dim and num_heads must be greater than 0, got embed_dim={} and "
                                               "num_heads={}", embed_dim, num_heads));
    if (head_dim * num_heads != embed_dim)
        module_error(*this, kType, fmt::format("embed_dim must be divisible by num_heads, got embed_dim={} and "
                                               "num_heads={}", embed_dim, num_heads));
    if (!(dropout >= 0.f && dropout <= 1.f))
        module_error(*this, kType, fmt::format("dropout must be in [0, 1], got {}", dropout));

    const std::size_t E = embed_dim;
    // torch's order of draws: out_proj (a Linear) draws its default init in __init__, then
    // _reset_parameters draws xavier_uniform_ for the projection weights and zeroes the biases.
    if (qkv_same_embed_dim()) {
        in_proj_weight = register_parameter("in_proj_weight", Tensor::zeros({3 * E, E}));
    } else {
        q_proj_weight = register_parameter("q_proj_weight", Tensor::zeros({E, E}));
        k_proj_weight = register_parameter("k_proj_weight", Tensor::zeros({E, this->kdim}));
        v_proj_weight = register_parameter("v_proj_weight", Tensor::zeros({E, this->vdim}));
    }
    if (bias) in_proj_bias = register_parameter("in_proj_bias", Tensor::zeros({3 * E}));
    out_proj = register_module("out_proj", std::make_shared<Linear>(E, E, bias));
    if (qkv_same_embed_dim())
        init::xavier_uniform_(in_proj_weight);  // fans of the packed (3E, E) matrix, as torch
    else
        for (Tensor* w : {&q_proj_weight, &k_proj_weight, &v_proj_weight}) init::xavier_uniform_(*w);
    if (bias) init::constant_(out_proj->bias, 0.f);
}

Tensor MultiheadAttention::in_projection(Block block, const Tensor& x) const {
    const std::size_t E = embed_dim;
    const Tensor& separate = block == q_block ? q_proj_weight : block == k_block ? k_proj_weight : v_proj_weight;
    const Tensor weight = qkv_same_embed_dim() ? narrow(in_proj_weight, 0, block * E, E) : separate;
    const Tensor bias = in_proj_bias.defined() ? narrow(in_proj_bias, 0, block * E, E) : Tensor();
    return linear(x, weight, bias);
}

void MultiheadAttention::check_inputs(const Tensor& query, const Tensor& key, const Tensor& value) const {
    const char* layout = batch_first ? "(N, L, features) (batch_first)" : "(L, N, features)";
    using Named = std::pair<const char*, const Tensor*>;
    for (const auto& [name, t] : {Named{"query", &query}, Named{"key", &key}, Named{"value", &value}})
        if (!t->defined() || t->dim() != 3)
            module_error(*this, kType, fmt::format("{} must be 3-D {}, got {}", name, layout,
                                                   t->defined() ? shape_str(t->shape()) : "an undefined tensor"));
    if (query.size(2) != embed_dim)
        module_error(*this, kType, fmt::format("was expecting embedding dimension of {}, but got query {}", embed_dim,
                                               shape_str(query.shape())));
    if (key.size(2) != kdim)
        module_error(*this, kType, fmt::format("key {} must end in kdim {}", shape_str(key.shape()), kdim));
    if (value.size(2) != vdim)
        module_error(*this, kType, fmt::format("value {} must end in vdim {}", shape_str(value.shape()), vdim));
    if (key.size(0) != value.size(0) || key.size(1) != value.size(1))
        module_error(*this, kType, fmt::format("key's sequence and batch dims of {} do not match value's {}",
                                               shape_str(key.shape()), shape_str(value.shape())));
    const int batch_axis = batch_first ? 0 : 1;
    if (query.size(batch_axis) != key.size(batch_axis))
        module_error(*this, kType, fmt::format("query {} and key {} differ in the batch size (axis {})",
                                               shape_str(query.shape()), shape_str(key.shape()), batch_axis));
}

AttentionMask MultiheadAttention::score_mask(const AttentionMask& attn_mask, const AttentionMask& key_padding_mask,
                                             std::size_t N, std::size_t Lq, std::size_t Lk) const {
    AttentionMask attn;
    if (attn_mask.defined()) {
        if (attn_mask.dim() == 2) {
            if (attn_mask.shape() != Shape{Lq, Lk})
                module_error(*this, kType, fmt::format("The shape of the 2D attn_mask is {}, but should be {}.",
                                                       shape_str(attn_mask.shape()), shape_str(Shape{Lq, Lk})));
            attn = attn_mask;  // (Lq, Lk) broadcasts over (N, h): torch's unsqueeze(0)
        } else if (attn_mask.dim() == 3) {
            const Shape expected{N * num_heads, Lq, Lk};
            if (attn_mask.shape() != expected)
                module_error(*this, kType, fmt::format("The shape of the 3D attn_mask is {}, but should be {}.",
                                                       shape_str(attn_mask.shape()), shape_str(expected)));
            attn = attn_mask.reshaped({N, num_heads, Lq, Lk});  // row n·h + head -> [n][head]
        } else {
            module_error(*this, kType, fmt::format("attn_mask's dimension {} is not supported (shape {}); expected "
                                                   "(L, S) = {} or (N·num_heads, L, S) = {}",
                                                   attn_mask.dim(), shape_str(attn_mask.shape()),
                                                   shape_str(Shape{Lq, Lk}), shape_str(Shape{N * num_heads, Lq, Lk})));
        }
    }
    AttentionMask padding;
    if (key_padding_mask.defined()) {
        if (key_padding_mask.shape() != Shape{N, Lk})
            module_error(*this, kType, fmt::format("expecting key_padding_mask shape of {}, but got {}",
                                                   shape_str(Shape{N, Lk}), shape_str(key_padding_mask.shape())));
        padding = key_padding_mask.reshaped({N, 1, 1, Lk});  // the same keys for every head and query
    }
    return attn.merged_with(padding);
}

MultiheadAttention::Output MultiheadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                                       const AttentionMask& key_padding_mask, bool need_weights,
                                                       const AttentionMask& attn_mask,
                                                       bool average_attn_weights) const {
    auto scope = enter(query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights);
    check_inputs(query, key, value);
    // batch first inside: (N, L, features)
    const Tensor q_in = batch_first ? query : transpose(query, 0, 1);
    const Tensor k_in = batch_first ? key : transpose(key, 0, 1);
    const Tensor v_in = batch_first ? value : transpose(value, 0, 1);
    const std::size_t N = q_in.size(0), Lq = q_in.size(1), Lk = k_in.size(1);
    const AttentionMask mask = score_mask(attn_mask, key_padding_mask, N, Lq, Lk);

    // (N, L, E) -> (N, h, L, E/h): the block n, head is torch's row n·h + head
    const Tensor q = split_heads(in_projection(q_block, q_in), num_heads);
    const Tensor k = split_heads(in_projection(k_block, k_in), num_heads);
    const Tensor v = split_heads(in_projection(v_block, v_in), num_heads);
    const std::string who = path().empty() ? kType : fmt::format("{} '{}'", kType, path());
    const AttentionResult attn = scaled_dot_product_attention(q, k, v, mask, dropout, is_training(), nullptr, who.c_str());

    const Tensor out = out_proj->forward(merge_heads(attn.context));  // (N, Lq, E)
    Output result{batch_first ? out : transpose(out, 0, 1), Tensor()};
    if (need_weights) result.attn_output_weights = average_attn_weights ? mean(attn.weights, {1}) : attn.weights;
    return scope.output(result);
}

}  // namespace xtgrad::nn::tutorial_d
