// TransformerDecoder — tutorial D, "Decoder" (torch.nn.TransformerDecoder).
//
//   x = layers.{i}(x, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
//                  memory_key_padding_mask)          for i = 0 .. num_layers-1
//   x = norm(x)                                      if the decoder has a final norm
// State: layers.{i}.* (TransformerDecoderLayer names), norm.weight, norm.bias.
// No positional encoding: as with torch, the caller adds one to tgt.
//
// Erratum (docs/tutorial_d.md): the tutorial applies one stored layer num_layers times, so
// the layers share their weights; xtgrad holds num_layers deep copies of the given layer, as
// torch's _get_clones (deep_copy, clone.hpp): separate parameters, equal starting values.
#pragma once

#include <xtgrad/nn/layers.hpp>
#include <xtgrad/nn/module.hpp>
#include <xtgrad/nn/tutorial_d/encoder_decoder_base.hpp>
#include <xtgrad/nn/tutorial_d/decoder_layer.hpp>
#include <xtgrad/nn/options.hpp>

#include <memory>

namespace xtgrad::nn::tutorial_d {

// torch's TransformerDecoder(decoder_layer, num_layers, norm=None).
class TransformerDecoderOptions {
public:
    TransformerDecoderOptions(std::shared_ptr<const TransformerDecoderLayer> decoder_layer, std::size_t num_layers)
        : decoder_layer_(std::move(decoder_layer)), num_layers_(num_layers) {}

    XTGRAD_ARG(std::shared_ptr<const TransformerDecoderLayer>, decoder_layer);  // cloned num_layers times
    XTGRAD_ARG(std::size_t, num_layers);
    XTGRAD_ARG(std::shared_ptr<LayerNorm>, norm);  // the final norm, registered as given; null = None
};

class TransformerDecoder : public DecoderBase {
public:
    explicit TransformerDecoder(const TransformerDecoderOptions& options);
    // torch's positional arguments: TransformerDecoder(decoder_layer, 6, norm).
    TransformerDecoder(const TransformerDecoderLayer& decoder_layer, std::size_t num_layers,
                       std::shared_ptr<LayerNorm> norm = nullptr);

    // Shapes as TransformerDecoderLayer::forward; returns the shape of tgt.
    Tensor forward(const Tensor& tgt, const Tensor& memory, const AttentionMask& tgt_mask = {},
                   const AttentionMask& memory_mask = {}, const AttentionMask& tgt_key_padding_mask = {},
                   const AttentionMask& memory_key_padding_mask = {}) const override;

    std::shared_ptr<ModuleList<TransformerDecoderLayer>> layers;
    std::shared_ptr<LayerNorm> norm;  // null without a final norm (torch's norm=None)
};

}  // namespace xtgrad::nn::tutorial_d
