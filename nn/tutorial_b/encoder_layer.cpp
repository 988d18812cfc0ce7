#include "nn/tutorial_b/encoder_layer.hpp"

namespace xtgrad::nn::tutorial_b {

EncoderLayer::EncoderLayer(std::size_t d_model, std::size_t num_heads, std::size_t d_ff, float p) {
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
