#include <xtgrad/nn/tutorial_a/scaled_dot_product_attention.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/nn/tutorial_a/checks.hpp>

namespace xtgrad::nn::tutorial_a {

namespace {
constexpr const char* kScaledDotProductAttentionType = "ScaledDotProductAttention";
}

ScaledDotProductAttention::ScaledDotProductAttention(const ScaledDotProductAttentionOptions& o)
    : attention_dropout(o.attention_dropout()) {
    if (!(attention_dropout >= 0.f && attention_dropout <= 1.f))
        fail("{}: attention_dropout must be in [0, 1], got {}", kScaledDotProductAttentionType, attention_dropout);
}

// q (B*, Lq, dk), k (B*, Lk, dk), v (B*, Lk, dv) -> context (B*, Lq, dv), attention (B*, Lq, Lk)
AttentionResult ScaledDotProductAttention::forward(const Tensor& q, const Tensor& k, const Tensor& v, float scale,
                                                   const Mask* attn_mask) const {
    auto scope = enter(q, k, v, scale, attn_mask);
    // bmm: three 3-D tensors with one batch size, as torch.bmm demands
    if (q.dim() != 3 || k.dim() != 3 || v.dim() != 3 || q.size(0) != k.size(0) || k.size(0) != v.size(0))
        module_error(*this, kScaledDotProductAttentionType,
                     fmt::format("q, k, v must be 3-D with one batch size (bmm), got {}, {}, {}", shape_str(q.shape()),
                                 shape_str(k.shape()), shape_str(v.shape())));
    if (attn_mask) check::mask(*this, kScaledDotProductAttentionType, "attn_mask", *attn_mask, {q.size(0), q.size(1), k.size(1)});
    AttentionOptions o;
    o.scale = scale != 0.f ? scale : 1.f;  // the notebook's `if scale:`
    o.masked = attn_mask;                  // filled with -inf
    o.dropout = attention_dropout;
    o.training = is_training();
    const std::string who = path().empty() ? kScaledDotProductAttentionType : fmt::format("{} '{}'", kScaledDotProductAttentionType, path());
    o.who = who.c_str();
    return scope.output(scaled_dot_product_attention(q, k, v, o));
}

}  // namespace xtgrad::nn::tutorial_a
