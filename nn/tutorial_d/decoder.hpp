// TransformerDecoder — tutorial D, "Decoder" (torch.nn.TransformerDecoder).
//
//   x = layers.{i}(x, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
//                  memory_key_padding_mask)          for i = 0 .. num_layers-1
//   x = norm(x)                                      if the decoder has a final norm
// State: layers.{i}.* (TransformerDecoderLayer names), norm.weight, norm.bias.
// No positional encoding: as with torch, the caller adds one to tgt.
//
// Erratum (docs/tutorial_d.md): the tutorial applies one stored layer num_layers times, so
// the layers share their weights; xtgrad builds num_layers separate layers that start equal,
// as torch's deep copies of one layer (docs/random.md).
#pragma once

#include "nn/layers.hpp"
#include "nn/module.hpp"
#include "nn/tutorial_d/decoder_layer.hpp"

#include <memory>

namespace xtgrad::nn::tutorial_d {

class TransformerDecoder : public Module {
public:
    TransformerDecoder(const TransformerLayerOptions& layer, std::size_t num_layers, bool final_norm = false);

    // Shapes as TransformerDecoderLayer::forward; returns the shape of tgt.
    Tensor forward(const Tensor& tgt, const Tensor& memory, const AttentionMask& tgt_mask = {},
                   const AttentionMask& memory_mask = {}, const AttentionMask& tgt_key_padding_mask = {},
                   const AttentionMask& memory_key_padding_mask = {}) const;

    std::shared_ptr<ModuleList<TransformerDecoderLayer>> layers;
    std::shared_ptr<LayerNorm> norm;  // null without a final norm (torch's norm=None)
};

}  // namespace xtgrad::nn::tutorial_d
