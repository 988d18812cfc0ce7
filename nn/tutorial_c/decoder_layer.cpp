#include <xtgrad/nn/tutorial_c/decoder_layer.hpp>

namespace xtgrad::nn::tutorial_c {

DecoderLayer::DecoderLayer(const DecoderLayerOptions& o) {
    dec_self_attn = register_module("dec_self_attn", std::make_shared<MultiHeadAttention>(o.attention()));
    dec_enc_attn = register_module("dec_enc_attn", std::make_shared<MultiHeadAttention>(o.attention()));
    pos_ffn = register_module("pos_ffn", std::make_shared<PoswiseFeedForwardNet>(o.feed_forward()));
}

DecoderLayerOutput DecoderLayer::forward(const Tensor& dec_inputs, const Tensor& enc_outputs,
                                         const Mask& dec_self_attn_mask, const Mask& dec_enc_attn_mask) const {
    auto scope = enter(dec_inputs, enc_outputs, dec_self_attn_mask, dec_enc_attn_mask);
    // dec_inputs: (B, Lt, d), enc_outputs: (B, Ls, d)
    const auto [self_out, self_attn] = dec_self_attn->forward(dec_inputs, dec_inputs, dec_inputs, dec_self_attn_mask);
    const auto [cross_out, enc_attn] = dec_enc_attn->forward(self_out, enc_outputs, enc_outputs, dec_enc_attn_mask);
    return scope.output(DecoderLayerOutput{pos_ffn->forward(cross_out), self_attn, enc_attn});
}

}  // namespace xtgrad::nn::tutorial_c
