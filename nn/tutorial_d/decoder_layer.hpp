// torch.nn.TransformerDecoderLayer — tutorial D, "Decoder Layer" (class TransformerDecoderLayer).
//
// Post-norm, as torch's default and the tutorial:
//   x = norm1(x + dropout1(self_attn(x, x, x, tgt_mask, tgt_key_padding_mask)))
//   x = norm2(x + dropout2(multihead_attn(x, memory, memory, memory_mask, memory_key_padding_mask)))
//   x = norm3(x + dropout3(linear2(dropout(activation(linear1(x))))))
// With norm_first each sub-layer is x + f(norm(x)) instead. State names are torch's:
// self_attn.*, multihead_attn.*, linear1.*, linear2.*, norm1.*, norm2.*, norm3.*.
// The tutorial's decoder layer matches torch; its decoder adds no positional encoding.
#pragma once

#include <xtgrad/nn/layers.hpp>
#include <xtgrad/nn/module.hpp>
#include <xtgrad/nn/tutorial_d/attention_mask.hpp>
#include <xtgrad/nn/tutorial_d/layer_options.hpp>
#include <xtgrad/nn/tutorial_d/multihead_attention.hpp>

#include <memory>

namespace xtgrad::nn::tutorial_d {

class TransformerDecoderLayer : public Module {
public:
    explicit TransformerDecoderLayer(const TransformerDecoderLayerOptions& options);
    // torch's positional arguments: TransformerDecoderLayer(512, 8) as the tutorial writes it.
    TransformerDecoderLayer(std::size_t d_model, std::size_t nhead, std::size_t dim_feedforward = 2048,
                            float dropout = 0.1f, Activation activation = Activation::relu,
                            float layer_norm_eps = 1e-5f, bool batch_first = false, bool norm_first = false);

    // tgt (T, N, E), memory (S, N, E) (batch first if batch_first); tgt_mask (T, T) or
    // (N·nhead, T, T), memory_mask (T, S) or (N·nhead, T, S); tgt_key_padding_mask (N, T),
    // memory_key_padding_mask (N, S). Returns the shape of tgt.
    Tensor forward(const Tensor& tgt, const Tensor& memory, const AttentionMask& tgt_mask = {},
                   const AttentionMask& memory_mask = {}, const AttentionMask& tgt_key_padding_mask = {},
                   const AttentionMask& memory_key_padding_mask = {}) const;

    TransformerDecoderLayerOptions options;
    std::shared_ptr<MultiheadAttention> self_attn, multihead_attn;
    std::shared_ptr<Linear> linear1;
    std::shared_ptr<Dropout> dropout;
    std::shared_ptr<Linear> linear2;
    std::shared_ptr<LayerNorm> norm1, norm2, norm3;
    std::shared_ptr<Dropout> dropout1, dropout2, dropout3;
};

}  // namespace xtgrad::nn::tutorial_d
