// TransformerEncoder — tutorial D, "Transformer layer组成Encoder" (torch.nn.TransformerEncoder,
// plus the tutorial's positional encoding at the input).
//
//   x = dropout(src + P)          tutorial D's positional_encoding along the sequence axis,
//                                 once (pe = encoder_input; dropout in training only)
//   x = layers.{i}(x, mask, src_key_padding_mask)   for i = 0 .. num_layers-1
//   x = norm(x)                   if the encoder has a final norm
// State: layers.{i}.* (TransformerEncoderLayer names), norm.weight, norm.bias.
// With pe = none this is exactly torch.nn.TransformerEncoder.
//
// Errata (docs/tutorial_d.md):
//  * the tutorial stores one layer (`self.layer = encoder_layer`) and applies it num_layers
//    times, so all layers share one set of weights; torch deep-copies the layer into a
//    ModuleList (_get_clones). xtgrad does the same (deep_copy, clone.hpp): num_layers separate
//    layers that start with the given layer's values; the given layer itself is not part of
//    the encoder, and a seed gives torch's weights (docs/random.md).
//  * it adds the encoding here *and* in every layer; xtgrad adds it once, here.
//  * its positional_encoding indexes X.shape[1], the batch axis of the (S, N, E) input the
//    encoder takes; xtgrad indexes the sequence axis (0, or 1 if batch_first).
#pragma once

#include <xtgrad/nn/layers.hpp>
#include <xtgrad/nn/module.hpp>
#include <xtgrad/nn/tutorial_d/encoder_decoder_base.hpp>
#include <xtgrad/nn/tutorial_d/encoder_layer.hpp>
#include <xtgrad/nn/options.hpp>

#include <memory>
#include <string>

namespace xtgrad::nn::tutorial_d {

// Where tutorial D's positional encoding goes: once on src at the encoder input (the
// tutorial's intent), or nowhere (exactly torch.nn, which leaves it to the caller).
enum class PositionalEncodingAt { encoder_input, none };
PositionalEncodingAt positional_encoding_from_string(const std::string& name);  // "encoder_input" | "none"

// torch's TransformerEncoder(encoder_layer, num_layers, norm=None), plus where the tutorial's
// positional encoding goes.
class TransformerEncoderOptions {
public:
    TransformerEncoderOptions(std::shared_ptr<const TransformerEncoderLayer> encoder_layer, std::size_t num_layers)
        : encoder_layer_(std::move(encoder_layer)), num_layers_(num_layers) {}

    XTGRAD_ARG(std::shared_ptr<const TransformerEncoderLayer>, encoder_layer);  // cloned num_layers times
    XTGRAD_ARG(std::size_t, num_layers);
    XTGRAD_ARG(std::shared_ptr<LayerNorm>, norm);  // the final norm, registered as given; null = None
    XTGRAD_ARG(PositionalEncodingAt, pe) = PositionalEncodingAt::encoder_input;
    XTGRAD_ARG(std::size_t, pe_max_len) = 512;
};

class TransformerEncoder : public EncoderBase {
public:
    explicit TransformerEncoder(const TransformerEncoderOptions& options);
    // torch's positional arguments: TransformerEncoder(encoder_layer, 6, norm).
    TransformerEncoder(const TransformerEncoderLayer& encoder_layer, std::size_t num_layers,
                       std::shared_ptr<LayerNorm> norm = nullptr,
                       PositionalEncodingAt pe = PositionalEncodingAt::encoder_input, std::size_t pe_max_len = 512);

    // src (S, N, E) or (N, S, E) if batch_first; mask (S, S) or (N·nhead, S, S);
    // src_key_padding_mask (N, S). Returns the shape of src.
    Tensor forward(const Tensor& src, const AttentionMask& mask = {},
                   const AttentionMask& src_key_padding_mask = {}) const override;

    std::shared_ptr<ModuleList<TransformerEncoderLayer>> layers;
    std::shared_ptr<LayerNorm> norm;  // null without a final norm (torch's norm=None)
    TransformerEncoderLayerOptions layer_options;
    PositionalEncodingAt pe;
    std::size_t pe_max_len;
};

}  // namespace xtgrad::nn::tutorial_d
