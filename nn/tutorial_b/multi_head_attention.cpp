#include <xtgrad/nn/tutorial_b/multi_head_attention.hpp>

#include <xtgrad/autograd/broadcast.hpp>
#include <xtgrad/autograd/error.hpp>

#include <cmath>

namespace xtgrad::nn::tutorial_b {

namespace {
constexpr const char* kMultiHeadAttentionType = "tutorial_b::MultiHeadAttention";
}

MultiHeadAttention::MultiHeadAttention(const MultiHeadAttentionOptions& o)
    : d_model(o.d_model()), num_heads(o.num_heads()), d_k(num_heads ? d_model / num_heads : 0) {
    // the tutorial's `assert d_model % num_heads == 0`
    if (num_heads == 0 || d_model == 0 || d_model % num_heads != 0)
        fail("{}: d_model must be divisible by num_heads, got d_model {} and num_heads {}", kMultiHeadAttentionType, d_model, num_heads);
    W_q = register_module("W_q", std::make_shared<Linear>(d_model, d_model));
    W_k = register_module("W_k", std::make_shared<Linear>(d_model, d_model));
    W_v = register_module("W_v", std::make_shared<Linear>(d_model, d_model));
    W_o = register_module("W_o", std::make_shared<Linear>(d_model, d_model));
}

Tensor MultiHeadAttention::split_heads(const Tensor& x) const { return nn::split_heads(x, num_heads); }

Tensor MultiHeadAttention::combine_heads(const Tensor& x) const { return merge_heads(x); }

// The attention's options for B: scores / sqrt(d_k), -1e9 where the mask says not to keep
// (masked_out holds that inverted mask for the call).
AttentionOptions MultiHeadAttention::attention_options(const Mask* mask, Mask& masked_out) const {
    if (mask) masked_out = !*mask;  // B's mask says where to keep
    AttentionOptions o;
    o.scale = 1.f / std::sqrt(static_cast<float>(d_k));
    o.masked = mask ? &masked_out : nullptr;
    o.fill = -1e9f;
    o.who = kMultiHeadAttentionType;
    o.need_weights = keep_weights_;  // the tutorial returns the context only
    return o;
}

Tensor MultiHeadAttention::scaled_dot_product_attention(const Tensor& Q, const Tensor& K, const Tensor& V,
                                                        const Mask* mask) const {
    Mask masked_out;
    const AttentionOptions o = attention_options(mask, masked_out);
    AttentionResult r = nn::scaled_dot_product_attention(Q, K, V, o);
    if (keep_weights_) kept_weights_ = r.weights.detach();
    return r.context;
}

void MultiHeadAttention::keep_attention_weights(bool on) {
    keep_weights_ = on;
    if (!on) kept_weights_ = Tensor();
}

Tensor MultiHeadAttention::forward(const Tensor& Q, const Tensor& K, const Tensor& V, const Mask& mask) const {
    auto scope = enter(Q, K, V, mask);
    return scope.output(attend(Q, K, V, &mask));
}

Tensor MultiHeadAttention::forward(const Tensor& Q, const Tensor& K, const Tensor& V) const {
    auto scope = enter(Q, K, V);
    return scope.output(attend(Q, K, V, nullptr));
}

Tensor MultiHeadAttention::attend(const Tensor& Q, const Tensor& K, const Tensor& V, const Mask* mask) const {
    check_inputs(Q, K, V, mask);  // in forward's module scope
    const Tensor q_all = W_q->forward(Q), k_all = W_k->forward(K), v_all = W_v->forward(V);  // (B, L, d)
    // The tutorial's lines are the last four. Where they would run the fused core and nobody keeps
    // the weights, it reads each head where W_q, W_k, W_v wrote it and writes the context merged:
    // the same numbers bit for bit, without split_heads' and combine_heads' copies
    // (docs/derivations.md, "The heads where they sit").
    Mask masked_out;
    if (const Tensor merged = attention_on_packed_heads(q_all, k_all, v_all, num_heads, attention_options(mask, masked_out));
        merged.defined())
        return W_o->forward(merged);
    // (B, L, d) -> (B, h, L, d_k)
    const Tensor q = split_heads(q_all), k = split_heads(k_all), v = split_heads(v_all);
    const Tensor attn_output = scaled_dot_product_attention(q, k, v, mask);  // (B, h, Lq, d_k)
    return W_o->forward(combine_heads(attn_output));                          // (B, Lq, d)
}

void MultiHeadAttention::check_inputs(const Tensor& Q, const Tensor& K, const Tensor& V, const Mask* mask) const {
    check_qkv(*this, kMultiHeadAttentionType, Q, K, V, d_model);
    if (!mask) return;
    const Shape scores{Q.size(0), num_heads, Q.size(1), K.size(1)};
    const Shape ms(mask->shape().begin(), mask->shape().end());
    if (ms.size() != 4 || !broadcasts_to(ms, scores))
        module_error(*this, kMultiHeadAttentionType,
                     fmt::format("mask {} does not fit the scores {} (batch, heads, len_q, len_k); B's masks are "
                                 "src_mask (B, 1, 1, Lk) and tgt_mask (B, 1, Lq, Lq), True = keep",
                                 shape_str(ms), shape_str(scores)));
}

}  // namespace xtgrad::nn::tutorial_b
