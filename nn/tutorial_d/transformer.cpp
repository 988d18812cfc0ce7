#include <xtgrad/nn/tutorial_d/transformer.hpp>

#include <xtgrad/io/shape_limits.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/nn/init.hpp>

#include <cstdlib>
#include <cxxabi.h>
#include <limits>

namespace xtgrad::nn::tutorial_d {

namespace {
template <class LayerOptions>
LayerOptions layer_options(const TransformerOptions& o) {
    return LayerOptions(o.d_model(), o.nhead())
        .dim_feedforward(o.dim_feedforward())
        .dropout(o.dropout())
        .activation(o.activation())
        .layer_norm_eps(o.layer_norm_eps())
        .batch_first(o.batch_first())
        .norm_first(o.norm_first());
}
}  // namespace

TransformerEncoderLayerOptions TransformerOptions::encoder_layer() const {
    return layer_options<TransformerEncoderLayerOptions>(*this);
}

TransformerDecoderLayerOptions TransformerOptions::decoder_layer() const {
    return layer_options<TransformerDecoderLayerOptions>(*this);
}

// torch's order: encoder layer, encoder norm, the encoder's clones; the same for the decoder;
// then _reset_parameters re-draws every matrix, custom stacks included.
Transformer::Transformer(const TransformerOptions& o) : options(o) {
    const auto final_norm = [&] { return std::make_shared<LayerNorm>(o.d_model(), o.layer_norm_eps()); };
    if (o.custom_encoder()) {
        encoder = register_module("encoder", o.custom_encoder());
    } else {
        const TransformerEncoderLayer encoder_layer(o.encoder_layer());
        encoder = register_module("encoder", std::make_shared<TransformerEncoder>(
                                                 encoder_layer, o.num_encoder_layers(), final_norm(), o.pe(),
                                                 o.pe_max_len()));
    }
    if (o.custom_decoder()) {
        decoder = register_module("decoder", o.custom_decoder());
    } else {
        const TransformerDecoderLayer decoder_layer(o.decoder_layer());
        decoder = register_module("decoder",
                                  std::make_shared<TransformerDecoder>(decoder_layer, o.num_decoder_layers(), final_norm()));
    }
    for (Tensor& p : parameters())
        if (p.dim() > 1) init::xavier_uniform_(p);
}

Tensor Transformer::forward(const Tensor& src, const Tensor& tgt, const AttentionMask& src_mask,
                            const AttentionMask& tgt_mask, const AttentionMask& memory_mask,
                            const AttentionMask& src_key_padding_mask, const AttentionMask& tgt_key_padding_mask,
                            const AttentionMask& memory_key_padding_mask) const {
    auto scope = enter(src, tgt, src_mask, tgt_mask, memory_mask, src_key_padding_mask, tgt_key_padding_mask, memory_key_padding_mask);
    // src: (S, N, E), tgt: (T, N, E), or batch first; unbatched (S, E) and (T, E), as torch 1.13
    const auto shape_of = [](const Tensor& t) { return t.defined() ? shape_str(t.shape()) : std::string("undefined"); };
    if (!src.defined() || !tgt.defined() || (src.dim() != 2 && src.dim() != 3) || tgt.dim() != src.dim())
        module_error(*this, "Transformer", fmt::format("src and tgt must be both batched (3-D) or both unbatched (2-D), "
                                                       "got {} and {}", shape_of(src), shape_of(tgt)));
    const bool batched = src.dim() == 3;
    const int batch_axis = options.batch_first() ? 0 : 1;
    if (batched && src.size(batch_axis) != tgt.size(batch_axis))
        module_error(*this, "Transformer", fmt::format("the batch number of src and tgt must be equal, got src {} and "
                                                       "tgt {} (batch axis {})",
                                                       shape_str(src.shape()), shape_str(tgt.shape()), batch_axis));
    if (src.size(-1) != options.d_model() || tgt.size(-1) != options.d_model())
        module_error(*this, "Transformer", fmt::format("the feature number of src and tgt must be equal to d_model {}, "
                                                       "got src {} and tgt {}",
                                                       options.d_model(), shape_str(src.shape()), shape_str(tgt.shape())));
    const Tensor memory = encoder->forward(src, src_mask, src_key_padding_mask);
    return scope.output(decoder->forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask));
}

void Transformer::wrong_type(const char* which, const Module& actual, const char* wanted_mangled) {
    int status = 0;
    char* wanted = abi::__cxa_demangle(wanted_mangled, nullptr, nullptr, &status);
    const std::string wanted_name = status == 0 && wanted ? wanted : wanted_mangled;
    std::free(wanted);
    fail("Transformer: the {} is a {} (a custom_{}), not a {}", which, actual.type_name(), which, wanted_name);
}

Tensor Transformer::generate_square_subsequent_mask(std::size_t sz) {
    // sz² floats must be a size xtensor can hold (1 << 32 would wrap): the readers' element limit
    const std::string problem = shape_problem({sz, sz}, sizeof(float));
    if (!problem.empty()) fail("Transformer::generate_square_subsequent_mask({}): {}", sz, problem);
    // the tutorial: (triu(ones) == 1).T marks j <= i as kept; the rest (j > i) becomes -inf
    Array mask = empty_array({sz, sz});
    mask.fill(0.f);
    for (std::size_t i = 0; i < sz; ++i)
        for (std::size_t j = i + 1; j < sz; ++j) mask(i, j) = -std::numeric_limits<float>::infinity();
    return Tensor(std::move(mask));
}

}  // namespace xtgrad::nn::tutorial_d
