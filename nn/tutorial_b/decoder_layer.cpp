#include <xtgrad/nn/tutorial_b/decoder_layer.hpp>

namespace xtgrad::nn::tutorial_b {

DecoderLayer::DecoderLayer(const DecoderLayerOptions& o) {
    const std::size_t d_model = o.d_model(), num_heads = o.num_heads(), d_ff = o.d_ff();
    const float p = o.dropout();
    self_attn = register_module("self_attn", std::make_shared<MultiHeadAttention>(d_model, num_heads));
    cross_attn = register_module("cross_attn", std::make_shared<MultiHeadAttention>(d_model, num_heads));
    feed_forward = register_module("feed_forward", std::make_shared<PositionWiseFeedForward>(d_model, d_ff));
    norm1 = register_module("norm1", std::make_shared<LayerNorm>(d_model));
    norm2 = register_module("norm2", std::make_shared<LayerNorm>(d_model));
    norm3 = register_module("norm3", std::make_shared<LayerNorm>(d_model));
    dropout = register_module("dropout", std::make_shared<Dropout>(p));
}

Tensor DecoderLayer::forward(const Tensor& x, const Tensor& enc_output, const Mask& src_mask,
                             const Mask& tgt_mask) const {
    auto scope = enter(x, enc_output, src_mask, tgt_mask);
    // x: (B, Lt, d), enc_output: (B, Ls, d)
    const Tensor self_output = self_attn->forward(x, x, x, tgt_mask);
    const Tensor h1 = norm1->forward(x + dropout->forward(self_output));
    const Tensor cross_output = cross_attn->forward(h1, enc_output, enc_output, src_mask);  // (B, Lt, d)
    const Tensor h2 = norm2->forward(h1 + dropout->forward(cross_output));
    const Tensor ff_output = feed_forward->forward(h2);
    return scope.output(norm3->forward(h2 + dropout->forward(ff_output)));
}

}  // namespace xtgrad::nn::tutorial_b
