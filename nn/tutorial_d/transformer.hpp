// Transformer — tutorial D, "Transformer" (torch.nn.Transformer, plus the tutorial's
// positional encoding on src).
//
//   memory = encoder(src, src_mask, src_key_padding_mask)     encoder: layers + norm, adds P to src
//   output = decoder(tgt, memory, tgt_mask, memory_mask,
//                    tgt_key_padding_mask, memory_key_padding_mask)   decoder: layers + norm
// src (S, N, E), tgt (T, N, E) -> output (T, N, E); batch first if batch_first. src and tgt
// are already embedded; the caller adds a positional encoding to tgt (as with torch).
// State: exactly torch.nn.Transformer's: encoder.layers.{i}.*, encoder.norm.*,
// decoder.layers.{i}.*, decoder.norm.*. Every matrix is re-initialised with
// xavier_uniform_ (torch's and the tutorial's _reset_parameters).
// With pe = none the model is exactly torch.nn.Transformer.
//
// Errata (docs/tutorial_d.md): the tutorial builds encoder_norm but constructs
// TransformerEncoder(encoder_layer, num_encoder_layers) without it, so its encoder has no
// final norm; xtgrad passes it, as torch does. Its encoder and decoder share one layer's
// weights across all their layers and add the positional encoding in every encoder layer
// (see encoder.hpp); its docstring says the layer counts default to 8, the code (and torch)
// to 6.
#pragma once

#include "nn/module.hpp"
#include "nn/tutorial_d/decoder.hpp"
#include "nn/tutorial_d/encoder.hpp"

#include <memory>

namespace xtgrad::nn::tutorial_d {

struct TransformerOptions {
    std::size_t d_model = 512;
    std::size_t nhead = 8;
    std::size_t num_encoder_layers = 6;
    std::size_t num_decoder_layers = 6;
    std::size_t dim_feedforward = 2048;
    float dropout = 0.1f;
    Activation activation = Activation::relu;
    float layer_norm_eps = 1e-5f;
    bool batch_first = false;
    bool norm_first = false;
    PositionalEncodingAt pe = PositionalEncodingAt::encoder_input;  // none: exactly torch.nn.Transformer
    std::size_t pe_max_len = 512;

    TransformerLayerOptions layer() const;
};

class Transformer : public Module {
public:
    explicit Transformer(const TransformerOptions& options = {});

    Tensor forward(const Tensor& src, const Tensor& tgt, const AttentionMask& src_mask = {},
                   const AttentionMask& tgt_mask = {}, const AttentionMask& memory_mask = {},
                   const AttentionMask& src_key_padding_mask = {}, const AttentionMask& tgt_key_padding_mask = {},
                   const AttentionMask& memory_key_padding_mask = {}) const;

    // The causal mask (sz, sz), additive float: 0 on and below the diagonal, -inf above,
    // so position i attends to positions 0..i only.
    static Tensor generate_square_subsequent_mask(std::size_t sz);

    TransformerOptions options;
    std::shared_ptr<TransformerEncoder> encoder;
    std::shared_ptr<TransformerDecoder> decoder;
};

}  // namespace xtgrad::nn::tutorial_d
