#include "nn/tutorial_d/encoder.hpp"

#include "autograd/error.hpp"
#include "autograd/ops.hpp"
#include "nn/tutorial_d/positional_encoding.hpp"
#include "nn/tutorial_d/sublayers.hpp"

#include "nn/init.hpp"

namespace xtgrad::nn::tutorial_d {

PositionalEncodingAt positional_encoding_from_string(const std::string& name) {
    if (name == "encoder_input") return PositionalEncodingAt::encoder_input;
    if (name == "none") return PositionalEncodingAt::none;
    fail("positional encoding placement should be encoder_input/none, not {}", name);
}

TransformerEncoder::TransformerEncoder(const TransformerLayerOptions& layer, std::size_t num_layers, bool final_norm,
                                       PositionalEncodingAt pe, std::size_t pe_max_len)
    : layer_options(layer), pe(pe), pe_max_len(pe_max_len) {
    layers = register_module("layers", std::make_shared<ModuleList<TransformerEncoderLayer>>());
    // num_layers clones of one layer, as torch.nn (equal initial values, separate parameters)
    init::as_clones(num_layers, [&] { layers->push_back(std::make_shared<TransformerEncoderLayer>(layer)); });
    if (final_norm) norm = register_module("norm", std::make_shared<LayerNorm>(layer.d_model, layer.layer_norm_eps));
}

Tensor TransformerEncoder::forward(const Tensor& src, const AttentionMask& mask,
                                   const AttentionMask& src_key_padding_mask) const {
    auto scope = enter(src, mask, src_key_padding_mask);
    // x: (S, N, E), or (N, S, E) if batch_first
    Tensor x = src;
    if (pe == PositionalEncodingAt::encoder_input) {
        check_layer_input(*this, "TransformerEncoder", "src", src, layer_options);
        const int seq_axis = layer_options.batch_first ? 1 : 0;
        if (src.size(seq_axis) > pe_max_len)
            module_error(*this, "TransformerEncoder",
                         fmt::format("src {} has {} positions (axis {}), more than the positional encoding's "
                                     "max_len {}", shape_str(src.shape()), src.size(seq_axis), seq_axis, pe_max_len));
        x = positional_encoding(src, layer_options.d_model, pe_max_len, seq_axis);
        x = dropout(x, layer_options.dropout, is_training(), default_generator());
    }
    for (const auto& layer : *layers) x = layer->forward(x, mask, src_key_padding_mask);
    return scope.output(norm ? norm->forward(x) : x);
}

}  // namespace xtgrad::nn::tutorial_d
