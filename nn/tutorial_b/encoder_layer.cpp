#include <xtgrad/nn/tutorial_b/encoder_layer.hpp>

namespace xtgrad::nn::tutorial_b {

EncoderLayer::EncoderLayer(const EncoderLayerOptions& o) {
    const std::size_t d_model = o.d_model(), num_heads = o.num_heads(), d_ff = o.d_ff();
    const float p = o.dropout();
    self_attn = register_module("self_attn", std::make_shared<MultiHeadAttention>(d_model, num_heads));
    feed_forward = register_module("feed_forward", std::make_shared<PositionWiseFeedForward>(d_model, d_ff));
    norm1 = register_module("norm1", std::make_shared<LayerNorm>(d_model));
    norm2 = register_module("norm2", std::make_shared<LayerNorm>(d_model));
    dropout = register_module("dropout", std::make_shared<Dropout>(p));
}

Tensor EncoderLayer::forward(const Tensor& x, const Mask& mask) const {
    auto scope = enter(x, mask);
    // x: (B, L, d)
    const Tensor attn_output = self_attn->forward(x, x, x, mask);
    const Tensor h = norm1->forward(x + dropout->forward(attn_output));
    const Tensor ff_output = feed_forward->forward(h);
    return scope.output(norm2->forward(h + dropout->forward(ff_output)));
}

}  // namespace xtgrad::nn::tutorial_b
