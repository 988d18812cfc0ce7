#include "nn/tutorial_a/encoder_layer.hpp"

namespace xtgrad::nn::tutorial_a {

EncoderLayer::EncoderLayer(std::size_t model_dim, std::size_t num_heads, std::size_t ffn_dim, float dropout,
                           const Options& options) {
    attention = register_module("attention", std::make_shared<MultiHeadAttention>(model_dim, num_heads, dropout, options));
    feed_forward = register_module(
        "feed_forward", std::make_shared<PositionalWiseFeedForward>(model_dim, ffn_dim, dropout, options.layer_norm));
}

// inputs (B, L, d) -> output (B, L, d), attention (B·h, L, L)
EncoderLayerOutput EncoderLayer::forward(const Tensor& inputs, const Mask* attn_mask) const {
    auto scope = enter(inputs, attn_mask);
    AttentionResult self = attention->forward(inputs, inputs, inputs, attn_mask);  // the notebook: padding_mask
    return scope.output(EncoderLayerOutput{feed_forward->forward(self.context), self.weights});
}

}  // namespace xtgrad::nn::tutorial_a
