#include <xtgrad/nn/tutorial_d/encoder_layer.hpp>

#include <xtgrad/nn/tutorial_d/sublayers.hpp>

#include <utility>

namespace xtgrad::nn::tutorial_d {

TransformerEncoderLayer::TransformerEncoderLayer(std::size_t d_model, std::size_t nhead, std::size_t dim_feedforward,
                                                 float dropout, Activation activation, float layer_norm_eps,
                                                 bool batch_first, bool norm_first)
    : TransformerEncoderLayer(TransformerEncoderLayerOptions::positional(d_model, nhead, dim_feedforward, dropout,
                                                                 std::move(activation), layer_norm_eps, batch_first,
                                                                 norm_first)) {}

// Registration order is torch's, so named_parameters() lists the same names in the same order.
TransformerEncoderLayer::TransformerEncoderLayer(const TransformerEncoderLayerOptions& o) : options(o) {
    self_attn = register_module("self_attn", std::make_shared<MultiheadAttention>(
                                                 MultiheadAttentionOptions(o.d_model(), o.nhead())
                                                     .dropout(o.dropout())
                                                     .batch_first(o.batch_first())));
    linear1 = register_module("linear1", std::make_shared<Linear>(o.d_model(), o.dim_feedforward()));
    dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout()));
    linear2 = register_module("linear2", std::make_shared<Linear>(o.dim_feedforward(), o.d_model()));
    norm1 = register_module("norm1", std::make_shared<LayerNorm>(o.d_model(), o.layer_norm_eps()));
    norm2 = register_module("norm2", std::make_shared<LayerNorm>(o.d_model(), o.layer_norm_eps()));
    dropout1 = register_module("dropout1", std::make_shared<Dropout>(o.dropout()));
    dropout2 = register_module("dropout2", std::make_shared<Dropout>(o.dropout()));
}

Tensor TransformerEncoderLayer::forward(const Tensor& src, const AttentionMask& src_mask,
                                        const AttentionMask& src_key_padding_mask) const {
    auto scope = enter(src, src_mask, src_key_padding_mask);
    check_layer_input(*this, "TransformerEncoderLayer", "src", src, options.d_model(), options.batch_first());
    // x: (S, N, E) or (N, S, E)
    const auto self_attention = [&](const Tensor& x) {
        return self_attn->forward(x, x, x, src_key_padding_mask, /*need_weights=*/false, src_mask).attn_output;
    };
    const auto ffn = [&](const Tensor& x) { return feed_forward(*linear1, *dropout, *linear2, options.activation(), x); };
    const Tensor x = residual(src, self_attention, *dropout1, *norm1, options.norm_first());
    return scope.output(residual(x, ffn, *dropout2, *norm2, options.norm_first()));
}

}  // namespace xtgrad::nn::tutorial_d
