#include <xtgrad/nn/tutorial_c/multi_head_attention.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/nn/attention.hpp>

#include <xtensor/xbroadcast.hpp>

namespace xtgrad::nn::tutorial_c {

namespace {
constexpr const char* kMultiHeadAttentionType = "tutorial_c::MultiHeadAttention";

std::size_t checked_positive(std::size_t v, const char* name) {
    if (v == 0) fail("{}: {} must be positive", kMultiHeadAttentionType, name);
    return v;
}
}  // namespace

MultiHeadAttention::MultiHeadAttention(const MultiHeadAttentionOptions& o)
    : d_model(checked_positive(o.d_model(), "d_model")),
      n_heads(checked_positive(o.n_heads(), "n_heads")),
      d_k(checked_positive(o.d_k(), "d_k")),
      d_v(checked_positive(o.d_v(), "d_v")),
      attention_(d_k) {
    W_Q = register_module("W_Q", std::make_shared<Linear>(d_model, d_k * n_heads));
    W_K = register_module("W_K", std::make_shared<Linear>(d_model, d_k * n_heads));
    W_V = register_module("W_V", std::make_shared<Linear>(d_model, d_v * n_heads));
    linear = register_module("linear", std::make_shared<Linear>(n_heads * d_v, d_model));
    layer_norm = register_module("layer_norm", std::make_shared<LayerNorm>(d_model));
}

MultiHeadAttentionOutput MultiHeadAttention::forward(const Tensor& Q, const Tensor& K, const Tensor& V,
                                                     const Mask& attn_mask) const {
    auto scope = enter(Q, K, V, attn_mask);
    check_inputs(Q, K, V, attn_mask);
    const Tensor& residual = Q;
    const Tensor q_s = split_heads(W_Q->forward(Q), n_heads);  // (B, h, Lq, d_k)
    const Tensor k_s = split_heads(W_K->forward(K), n_heads);  // (B, h, Lk, d_k)
    const Tensor v_s = split_heads(W_V->forward(V), n_heads);  // (B, h, Lk, d_v)

    // attn_mask.unsqueeze(1).repeat(1, n_heads, 1, 1): (B, Lq, Lk) -> (B, h, Lq, Lk)
    const std::size_t B = Q.size(0), Lq = Q.size(1), Lk = K.size(1);
    Mask one_head = attn_mask;
    one_head.reshape(Shape{B, 1, Lq, Lk});
    const Mask per_head = xt::broadcast(one_head, Shape{B, n_heads, Lq, Lk});

    const AttentionResult a = attention_.forward(q_s, k_s, v_s, per_head);
    const Tensor context = merge_heads(a.context);  // (B, Lq, h·d_v)
    const Tensor output = linear->forward(context);  // (B, Lq, d)
    return scope.output(MultiHeadAttentionOutput{layer_norm->forward(output + residual), a.weights});
}

void MultiHeadAttention::check_inputs(const Tensor& Q, const Tensor& K, const Tensor& V, const Mask& attn_mask) const {
    check_qkv(*this, kMultiHeadAttentionType, Q, K, V, d_model);
    const Shape expected{Q.size(0), Q.size(1), K.size(1)};
    const Shape ms(attn_mask.shape().begin(), attn_mask.shape().end());
    if (ms != expected)
        module_error(*this, kMultiHeadAttentionType,
                     fmt::format("attn_mask {} must be (batch, len_q, len_k) = {}", shape_str(ms), shape_str(expected)));
}

}  // namespace xtgrad::nn::tutorial_c
