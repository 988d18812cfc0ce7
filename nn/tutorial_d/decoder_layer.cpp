#include <xtgrad/nn/tutorial_d/decoder_layer.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/nn/tutorial_d/sublayers.hpp>

#include <utility>

namespace xtgrad::nn::tutorial_d {

TransformerDecoderLayer::TransformerDecoderLayer(std::size_t d_model, std::size_t nhead, std::size_t dim_feedforward,
                                                 float dropout, Activation activation, float layer_norm_eps,
                                                 bool batch_first, bool norm_first)
    : TransformerDecoderLayer(TransformerDecoderLayerOptions::positional(d_model, nhead, dim_feedforward, dropout,
                                                                 std::move(activation), layer_norm_eps, batch_first,
                                                                 norm_first)) {}

// Registration order is torch's, so named_parameters() lists the same names in the same order.
TransformerDecoderLayer::TransformerDecoderLayer(const TransformerDecoderLayerOptions& o) : options(o) {
    auto attention = [&] {
        return std::make_shared<MultiheadAttention>(
            MultiheadAttentionOptions(o.d_model(), o.nhead()).dropout(o.dropout()).batch_first(o.batch_first()));
    };
    self_attn = register_module("self_attn", attention());
    multihead_attn = register_module("multihead_attn", attention());
    linear1 = register_module("linear1", std::make_shared<Linear>(o.d_model(), o.dim_feedforward()));
    dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout()));
    linear2 = register_module("linear2", std::make_shared<Linear>(o.dim_feedforward(), o.d_model()));
    norm1 = register_module("norm1", std::make_shared<LayerNorm>(o.d_model(), o.layer_norm_eps()));
    norm2 = register_module("norm2", std::make_shared<LayerNorm>(o.d_model(), o.layer_norm_eps()));
    norm3 = register_module("norm3", std::make_shared<LayerNorm>(o.d_model(), o.layer_norm_eps()));
    dropout1 = register_module("dropout1", std::make_shared<Dropout>(o.dropout()));
    dropout2 = register_module("dropout2", std::make_shared<Dropout>(o.dropout()));
    dropout3 = register_module("dropout3", std::make_shared<Dropout>(o.dropout()));
}

Tensor TransformerDecoderLayer::forward(const Tensor& tgt, const Tensor& memory, const AttentionMask& tgt_mask,
                                        const AttentionMask& memory_mask, const AttentionMask& tgt_key_padding_mask,
                                        const AttentionMask& memory_key_padding_mask) const {
    auto scope = enter(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask);
    check_layer_input(*this, "TransformerDecoderLayer", "tgt", tgt, options.d_model(), options.batch_first());
    check_layer_input(*this, "TransformerDecoderLayer", "memory", memory, options.d_model(), options.batch_first());
    if (tgt.dim() != memory.dim())
        module_error(*this, "TransformerDecoderLayer",
                     fmt::format("tgt {} and memory {} must be both batched (3-D) or both unbatched (2-D)",
                                 shape_str(tgt.shape()), shape_str(memory.shape())));
    // x: (T, N, E) or (N, T, E); memory: (S, N, E) or (N, S, E)
    const auto self_attention = [&](const Tensor& x) {
        return self_attn->forward(x, x, x, tgt_key_padding_mask, /*need_weights=*/false, tgt_mask).attn_output;
    };
    const auto cross_attention = [&](const Tensor& x) {
        return multihead_attn->forward(x, memory, memory, memory_key_padding_mask, /*need_weights=*/false, memory_mask)
            .attn_output;
    };
    const auto ffn = [&](const Tensor& x) { return feed_forward(*linear1, *dropout, *linear2, options.activation(), x); };
    Tensor x = residual(tgt, self_attention, *dropout1, *norm1, options.norm_first());
    x = residual(x, cross_attention, *dropout2, *norm2, options.norm_first());
    return scope.output(residual(x, ffn, *dropout3, *norm3, options.norm_first()));
}

}  // namespace xtgrad::nn::tutorial_d
