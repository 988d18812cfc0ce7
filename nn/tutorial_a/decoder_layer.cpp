#include <xtgrad/nn/tutorial_a/decoder_layer.hpp>

namespace xtgrad::nn::tutorial_a {

DecoderLayer::DecoderLayer(const DecoderLayerOptions& o) {
    self_attention = register_module("self_attention", std::make_shared<MultiHeadAttention>(o.attention()));
    // the notebook reuses one module
    context_attention = register_module("context_attention", std::make_shared<MultiHeadAttention>(o.attention()));
    feed_forward = register_module("feed_forward", std::make_shared<PositionalWiseFeedForward>(o.feed_forward()));
}

// dec_inputs (B, Lt, d), enc_outputs (B, Ls, d) -> output (B, Lt, d) and both attention maps
DecoderLayerOutput DecoderLayer::forward(const Tensor& dec_inputs, const Tensor& enc_outputs, const Mask* self_attn_mask,
                                         const Mask* context_attn_mask) const {
    auto scope = enter(dec_inputs, enc_outputs, self_attn_mask, context_attn_mask);
    AttentionResult self = self_attention->forward(dec_inputs, dec_inputs, dec_inputs, self_attn_mask);
    // query: the decoder's state; key and value: the encoder's outputs
    AttentionResult context = context_attention->forward(enc_outputs, enc_outputs, self.context, context_attn_mask);
    return scope.output(DecoderLayerOutput{feed_forward->forward(context.context), self.weights, context.weights});
}

}  // namespace xtgrad::nn::tutorial_a
