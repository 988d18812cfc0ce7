#include <xtgrad/nn/tutorial_d/scaled_dot_product_attention.hpp>

#include <xtgrad/autograd/error.hpp>

#include <cmath>

namespace xtgrad::nn::tutorial_d {

AttentionResult scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                             const AttentionMask& attn_mask, float dropout_p, bool training,
                                             Generator* gen, const char* who, bool need_weights) {
    if (q.dim() < 2) fail("{}: q needs at least 2 dims, got {}", who, shape_str(q.shape()));
    const Tensor q_scaled = q / std::sqrt(static_cast<float>(q.size(-1)));
    AttentionOptions o;
    o.who = who;
    o.dropout = dropout_p;
    o.training = training;
    o.gen = gen;
    o.need_weights = need_weights;
    o.weights_after_dropout = true;  // torch returns attn after F.dropout, the weights the output used
    const Tensor additive = attn_mask.defined() && !attn_mask.is_bool() ? attn_mask.additive() : Tensor();
    if (attn_mask.is_bool()) o.masked = &attn_mask.masked();  // filled with -inf (the default fill)
    if (additive.defined()) o.additive = &additive;
    return nn::scaled_dot_product_attention(q_scaled, k, v, o);
}

}  // namespace xtgrad::nn::tutorial_d
