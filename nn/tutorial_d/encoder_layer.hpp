// torch.nn.TransformerEncoderLayer — tutorial D, "Encoder Layer" (class TransformerEncoderLayer).
//
// Post-norm, as torch's default and the tutorial:
//   x = norm1(x + dropout1(self_attn(x, x, x, src_mask, src_key_padding_mask)))
//   x = norm2(x + dropout2(linear2(dropout(activation(linear1(x))))))
// With norm_first (torch's pre-norm option) each sub-layer is x + f(norm(x)) instead.
// Members and state names are torch's: self_attn.*, linear1.*, linear2.*, norm1.*, norm2.*
// (dropout, dropout1, dropout2 have no state).
//
// Errata (docs/tutorial_d.md): the tutorial's forward begins with
// `src = positional_encoding(src, src.shape[-1])`, so every layer adds the encoding again
// (and its TransformerEncoder once more); xtgrad's layer adds none: the encoding goes in
// once, at the encoder input. The tutorial also reuses `self.dropout` after the FFN where
// torch uses dropout2 (the same p, so only the name differs).
#pragma once

#include <xtgrad/nn/layers.hpp>
#include <xtgrad/nn/module.hpp>
#include <xtgrad/nn/tutorial_d/attention_mask.hpp>
#include <xtgrad/nn/tutorial_d/layer_options.hpp>
#include <xtgrad/nn/tutorial_d/multihead_attention.hpp>

#include <memory>

namespace xtgrad::nn::tutorial_d {

class TransformerEncoderLayer : public Module {
public:
    explicit TransformerEncoderLayer(const TransformerEncoderLayerOptions& options);
    // torch's positional arguments: TransformerEncoderLayer(512, 8) as the tutorial writes it.
    TransformerEncoderLayer(std::size_t d_model, std::size_t nhead, std::size_t dim_feedforward = 2048,
                            float dropout = 0.1f, Activation activation = Activation::relu,
                            float layer_norm_eps = 1e-5f, bool batch_first = false, bool norm_first = false);

    // src (S, N, E), or (N, S, E) if batch_first; src_mask (S, S) or (N·nhead, S, S);
    // src_key_padding_mask (N, S). Returns the shape of src.
    Tensor forward(const Tensor& src, const AttentionMask& src_mask = {},
                   const AttentionMask& src_key_padding_mask = {}) const;

    TransformerEncoderLayerOptions options;
    std::shared_ptr<MultiheadAttention> self_attn;
    std::shared_ptr<Linear> linear1;
    std::shared_ptr<Dropout> dropout;
    std::shared_ptr<Linear> linear2;
    std::shared_ptr<LayerNorm> norm1, norm2;
    std::shared_ptr<Dropout> dropout1, dropout2;
};

}  // namespace xtgrad::nn::tutorial_d
