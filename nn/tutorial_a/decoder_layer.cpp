#include "nn/tutorial_a/decoder_layer.hpp"

namespace xtgrad::nn::tutorial_a {

DecoderLayer::DecoderLayer(std::size_t model_dim, std::size_t num_heads, std::size_t ffn_dim, float dropout,
                           const Options& options) {
    auto attention = [&] { return std::make_shared<MultiHeadAttention>(model_dim, num_heads, dropout, options); };
    self_attention = register_module("self_attention", attention());
    context_attention = register_module("context_attention", attention());  // the notebook reuses one module
    feed_forward = register_module(
        "feed_forward", std::make_shared<PositionalWiseFeedForward>(model_dim, ffn_dim, dropout, options.layer_norm));
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
