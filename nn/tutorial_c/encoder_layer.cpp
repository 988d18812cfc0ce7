#include <xtgrad/nn/tutorial_c/encoder_layer.hpp>

namespace xtgrad::nn::tutorial_c {

EncoderLayer::EncoderLayer(const EncoderLayerOptions& o) {
    enc_self_attn = register_module("enc_self_attn", std::make_shared<MultiHeadAttention>(o.attention()));
    pos_ffn = register_module("pos_ffn", std::make_shared<PoswiseFeedForwardNet>(o.feed_forward()));
}

EncoderLayerOutput EncoderLayer::forward(const Tensor& enc_inputs, const Mask& enc_self_attn_mask) const {
    auto scope = enter(enc_inputs, enc_self_attn_mask);
    // enc_inputs: (B, L, d); the same tensor is Q, K and V
    const auto [enc_outputs, attn] = enc_self_attn->forward(enc_inputs, enc_inputs, enc_inputs, enc_self_attn_mask);
    return scope.output(EncoderLayerOutput{pos_ffn->forward(enc_outputs), attn});
}

}  // namespace xtgrad::nn::tutorial_c
