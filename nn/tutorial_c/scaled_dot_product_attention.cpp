#include <xtgrad/nn/tutorial_c/scaled_dot_product_attention.hpp>

#include <xtgrad/autograd/error.hpp>

#include <cmath>

namespace xtgrad::nn::tutorial_c {

namespace {
constexpr const char* kScaledDotProductAttentionType = "tutorial_c::ScaledDotProductAttention";
}

ScaledDotProductAttention::ScaledDotProductAttention(const ScaledDotProductAttentionOptions& o) : d_k(o.d_k()) {
    if (d_k == 0) fail("{}: d_k must be positive", kScaledDotProductAttentionType);
}

AttentionResult ScaledDotProductAttention::forward(const Tensor& Q, const Tensor& K, const Tensor& V,
                                                   const Mask& attn_mask) const {
    auto scope = enter(Q, K, V, attn_mask);
    if (Q.dim() != 4 || K.dim() != 4 || V.dim() != 4 || Q.size(-1) != d_k || K.size(-1) != d_k)
        module_error(*this, kScaledDotProductAttentionType,
                     fmt::format("expected Q (B, h, Lq, d_k={}), K (B, h, Lk, d_k), V (B, h, Lk, d_v), got Q {}, K {}, V {}",
                                 d_k, shape_str(Q.shape()), shape_str(K.shape()), shape_str(V.shape())));
    const Shape scores{Q.size(0), Q.size(1), Q.size(2), K.size(2)};
    const Shape ms(attn_mask.shape().begin(), attn_mask.shape().end());
    if (ms != scores)
        module_error(*this, kScaledDotProductAttentionType,
                     fmt::format("attn_mask {} must have the shape of the scores (B, h, Lq, Lk) = {}", shape_str(ms),
                                 shape_str(scores)));
    AttentionOptions o;
    o.scale = 1.f / std::sqrt(static_cast<float>(d_k));
    o.masked = &attn_mask;
    o.fill = -1e9f;
    o.who = kScaledDotProductAttentionType;
    return scope.output(scaled_dot_product_attention(Q, K, V, o));
}

}  // namespace xtgrad::nn::tutorial_c
