#include <xtgrad/nn/tutorial_a/multi_head_attention.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/nn/tutorial_a/checks.hpp>
#include <xtgrad/nn/layer_norm_choice.hpp>

#include <algorithm>
#include <cmath>

namespace xtgrad::nn::tutorial_a {

namespace {
constexpr const char* kMultiHeadAttentionType = "MultiHeadAttention";
}

MultiHeadAttention::MultiHeadAttention(const MultiHeadAttentionOptions& o)
    : dim_per_head(o.num_heads() ? o.model_dim() / o.num_heads() : 0), num_heads(o.num_heads()), options(o.errata()) {
    const std::size_t model_dim = o.model_dim();
    const float dropout_p = o.dropout();
    if (num_heads == 0 || model_dim % num_heads != 0)
        fail("{}: model_dim {} is not divisible by num_heads {}: every head needs dim_per_head = model_dim / num_heads "
             "features",
             kMultiHeadAttentionType, model_dim, num_heads);
    if (options.scale == ScaleRule::dk_over_heads && dim_per_head < num_heads)
        fail("{}: the literal scale (dim_per_head // num_heads) ** -0.5 divides by zero for dim_per_head {} < num_heads {}",
             kMultiHeadAttentionType, dim_per_head, num_heads);
    linear_k = register_module("linear_k", std::make_shared<Linear>(model_dim, dim_per_head * num_heads));
    linear_v = register_module("linear_v", std::make_shared<Linear>(model_dim, dim_per_head * num_heads));
    linear_q = register_module("linear_q", std::make_shared<Linear>(model_dim, dim_per_head * num_heads));
    dot_product_attention = register_module("dot_product_attention", std::make_shared<ScaledDotProductAttention>(dropout_p));
    linear_final = register_module("linear_final", std::make_shared<Linear>(model_dim, model_dim));
    dropout = register_module("dropout", std::make_shared<Dropout>(dropout_p));
    LayerNormChoice ln = make_layer_norm(options.layer_norm, model_dim);
    layer_norm = register_module("layer_norm", ln.module);
    norm_ = ln.forward;
}

float MultiHeadAttention::scale() const {
    const std::size_t d = options.scale == ScaleRule::dk_over_heads ? dim_per_head / num_heads : dim_per_head;
    return static_cast<float>(std::pow(static_cast<double>(d), -0.5));
}

Tensor MultiHeadAttention::split(const Tensor& x) const {
    const long B = static_cast<long>(x.size(0)), L = static_cast<long>(x.size(1));
    const long h = static_cast<long>(num_heads), dk = static_cast<long>(dim_per_head);
    if (options.split == HeadSplit::view_only) return reshape(x, {B * h, -1, dk});  // the notebook's view
    return reshape(split_heads(x, num_heads), {B * h, L, dk});                    // (B, h, L, dk) flattened
}

Tensor MultiHeadAttention::merge(const Tensor& context) const {
    const long h = static_cast<long>(num_heads), dk = static_cast<long>(dim_per_head);
    const long B = static_cast<long>(context.size(0)) / h, Lq = static_cast<long>(context.size(1));
    if (options.split == HeadSplit::view_only) return reshape(context, {B, -1, h * dk});
    return merge_heads(reshape(context, {B, h, Lq, dk}));
}

Mask MultiHeadAttention::repeat_per_head(const Mask& mask) const {
    const std::size_t B = mask.shape(0), h = num_heads, block = mask.shape(1) * mask.shape(2);
    Mask out = Mask::from_shape({B * h, mask.shape(1), mask.shape(2)});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t head = 0; head < h; ++head) {
            // literal: mask.repeat(h, 1, 1), head-major; intent: repeat_interleave(h, 0), row b·h + head
            const std::size_t row = options.split == HeadSplit::view_only ? head * B + b : b * h + head;
            std::copy(mask.data() + b * block, mask.data() + (b + 1) * block, out.data() + row * block);
        }
    return out;
}

// key, value (B, Lk, d), query (B, Lq, d) -> output (B, Lq, d), attention (B·h, Lq, Lk)
AttentionResult MultiHeadAttention::forward(const Tensor& key, const Tensor& value, const Tensor& query,
                                            const Mask* attn_mask) const {
    auto scope = enter(key, value, query, attn_mask);
    const std::size_t d = dim_per_head * num_heads;
    check::features(*this, kMultiHeadAttentionType, "key", key, d);
    check::features(*this, kMultiHeadAttentionType, "value", value, d);
    check::features(*this, kMultiHeadAttentionType, "query", query, d);
    if (key.size(0) != value.size(0) || key.size(0) != query.size(0) || key.size(1) != value.size(1))
        module_error(*this, kMultiHeadAttentionType,
                     fmt::format("key {} and value {} must have the same shape, and query {} the same batch",
                                 shape_str(key.shape()), shape_str(value.shape()), shape_str(query.shape())));
    if (attn_mask) check::mask(*this, kMultiHeadAttentionType, "attn_mask", *attn_mask, {query.size(0), query.size(1), key.size(1)});

    const Tensor& residual = query;
    Tensor k = split(linear_k->forward(key));      // (B·h, Lk, dk)
    Tensor v = split(linear_v->forward(value));    // (B·h, Lk, dk)
    Tensor q = split(linear_q->forward(query));    // (B·h, Lq, dk)
    const Mask repeated = attn_mask ? repeat_per_head(*attn_mask) : Mask();
    AttentionResult a = dot_product_attention->forward(q, k, v, scale(), attn_mask ? &repeated : nullptr);
    Tensor output = dropout->forward(linear_final->forward(merge(a.context)));  // (B, Lq, d)
    return scope.output(AttentionResult{norm_(residual + output), a.weights});
}

}  // namespace xtgrad::nn::tutorial_a
