#include "nn/tutorial_c/encoder_layer.hpp"

namespace xtgrad::nn::tutorial_c {

EncoderLayer::EncoderLayer(std::size_t d_model, std::size_t n_heads, std::size_t d_ff, std::size_t d_k,
                           std::size_t d_v) {
    enc_self_attn = register_module("enc_self_attn", std::make_shared<MultiHeadAttention>(d_model, n_heads, d_k, d_v));
    pos_ffn = register_module("pos_ffn", std::make_shared<PoswiseFeedForwardNet>(d_model, d_ff));
}

EncoderLayerOutput EncoderLayer::forward(const Tensor& enc_inputs, const Mask& enc_self_attn_mask) const {
    auto scope = enter(enc_inputs, enc_self_attn_mask);
    // enc_inputs: (B, L, d); the same tensor is Q, K and V
    const auto [enc_outputs, attn] = enc_self_attn->forward(enc_inputs, enc_inputs, enc_inputs, enc_self_attn_mask);
    return scope.output(EncoderLayerOutput{pos_ffn->forward(enc_outputs), attn});
}

}  // namespace xtgrad::nn::tutorial_c
