#include <xtgrad/nn/tutorial_d/encoder.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/nn/tutorial_d/clone.hpp>
#include <xtgrad/nn/tutorial_d/positional_encoding.hpp>
#include <xtgrad/nn/tutorial_d/sublayers.hpp>

namespace xtgrad::nn::tutorial_d {

PositionalEncodingAt positional_encoding_from_string(const std::string& name) {
    if (name == "encoder_input") return PositionalEncodingAt::encoder_input;
    if (name == "none") return PositionalEncodingAt::none;
    fail("TransformerEncoder: positional encoding placement should be encoder_input/none, not {}", name);
}

namespace {
const TransformerEncoderLayer& given_layer(const TransformerEncoderOptions& o) {
    if (!o.encoder_layer()) fail("TransformerEncoder: encoder_layer is null; give the layer to clone");
    return *o.encoder_layer();
}
}  // namespace

TransformerEncoder::TransformerEncoder(const TransformerEncoderOptions& o)
    : layer_options(given_layer(o).options), pe(o.pe()), pe_max_len(o.pe_max_len()) {
    layers = register_module("layers", std::make_shared<ModuleList<TransformerEncoderLayer>>());
    const TransformerEncoderLayer& encoder_layer = *o.encoder_layer();  // checked by given_layer above
    for (std::size_t i = 0; i < o.num_layers(); ++i) layers->push_back(deep_copy(encoder_layer));  // torch's _get_clones
    if (o.norm()) norm = register_module("norm", o.norm());
}

// The options only borrow the layer for the constructor, which copies it: a non-owning pointer.
TransformerEncoder::TransformerEncoder(const TransformerEncoderLayer& encoder_layer, std::size_t num_layers,
                                       std::shared_ptr<LayerNorm> final_norm, PositionalEncodingAt pe,
                                       std::size_t pe_max_len)
    : TransformerEncoder(TransformerEncoderOptions(borrowed(encoder_layer), num_layers)
                             .norm(std::move(final_norm))
                             .pe(pe)
                             .pe_max_len(pe_max_len)) {}

Tensor TransformerEncoder::forward(const Tensor& src, const AttentionMask& mask,
                                   const AttentionMask& src_key_padding_mask) const {
    auto scope = enter(src, mask, src_key_padding_mask);
    // x: (S, N, E), or (N, S, E) if batch_first
    Tensor x = src;
    if (pe == PositionalEncodingAt::encoder_input) {
        check_layer_input(*this, "TransformerEncoder", "src", src, layer_options.d_model(), layer_options.batch_first());
        const bool unbatched = src.dim() == 2;  // (S, E): the sequence is axis 0 whatever batch_first says
        const int seq_axis = layer_options.batch_first() && !unbatched ? 1 : 0;
        if (src.size(seq_axis) > pe_max_len)
            module_error(*this, "TransformerEncoder",
                         fmt::format("src {} has {} positions (axis {}), more than the positional encoding's "
                                     "max_len {}", shape_str(src.shape()), src.size(seq_axis), seq_axis, pe_max_len));
        // the tutorial's positional_encoding with its dropout, in training mode only (erratum 7);
        // unbatched src gets a batch axis of 1 for it
        const Tensor batched = unbatched ? unsqueeze(src, 1) : src;
        x = positional_encoding(batched, layer_options.d_model(), layer_options.dropout(), pe_max_len, seq_axis,
                                is_training());
        if (unbatched) x = squeeze(x, 1);
    }
    for (const auto& layer : *layers) x = layer->forward(x, mask, src_key_padding_mask);
    return scope.output(norm ? norm->forward(x) : x);
}

}  // namespace xtgrad::nn::tutorial_d
