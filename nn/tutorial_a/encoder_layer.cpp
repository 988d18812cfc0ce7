#include <xtgrad/nn/tutorial_a/encoder_layer.hpp>

namespace xtgrad::nn::tutorial_a {

EncoderLayer::EncoderLayer(const EncoderLayerOptions& o) {
    attention = register_module("attention", std::make_shared<MultiHeadAttention>(o.attention()));
    feed_forward = register_module("feed_forward", std::make_shared<PositionalWiseFeedForward>(o.feed_forward()));
}

// inputs (B, L, d) -> output (B, L, d), attention (B·h, L, L)
EncoderLayerOutput EncoderLayer::forward(const Tensor& inputs, const Mask* attn_mask) const {
    auto scope = enter(inputs, attn_mask);
    AttentionResult self = attention->forward(inputs, inputs, inputs, attn_mask);  // the notebook: padding_mask
    return scope.output(EncoderLayerOutput{feed_forward->forward(self.context), self.weights});
}

}  // namespace xtgrad::nn::tutorial_a
