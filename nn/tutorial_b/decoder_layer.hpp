// Tutorial B, "DecoderLayer": class DecoderLayer(d_model, num_heads, d_ff, dropout).
//
// Three post-norm sub-layers:
//   x = norm1(x + dropout(self_attn(x, x, x, tgt_mask)))                  masked self-attention
//   x = norm2(x + dropout(cross_attn(x, enc_output, enc_output, src_mask)))  queries from the decoder,
//                                                                            keys and values from the encoder
//   x = norm3(x + dropout(feed_forward(x)))
// State: self_attn.*, cross_attn.* (two separate attention modules), feed_forward.*,
// norm1.*, norm2.*, norm3.*. Masks are B's (True = keep): tgt_mask (B, 1, Lt, Lt),
// src_mask (B, 1, 1, Ls).
#pragma once

#include <xtgrad/nn/layers.hpp>
#include <xtgrad/nn/module.hpp>
#include <xtgrad/nn/tutorial_b/layer_options.hpp>
#include <xtgrad/nn/tutorial_b/multi_head_attention.hpp>
#include <xtgrad/nn/tutorial_b/position_wise_feed_forward.hpp>

#include <memory>

namespace xtgrad::nn::tutorial_b {

class DecoderLayer : public Module {
public:
    explicit DecoderLayer(const DecoderLayerOptions& options);
    DecoderLayer(std::size_t d_model, std::size_t num_heads, std::size_t d_ff, float dropout)
        : DecoderLayer(DecoderLayerOptions(d_model, num_heads, d_ff).dropout(dropout)) {}
    // x (B, Lt, d), enc_output (B, Ls, d) -> (B, Lt, d)
    Tensor forward(const Tensor& x, const Tensor& enc_output, const Mask& src_mask, const Mask& tgt_mask) const;

    std::shared_ptr<MultiHeadAttention> self_attn, cross_attn;
    std::shared_ptr<PositionWiseFeedForward> feed_forward;
    std::shared_ptr<LayerNorm> norm1, norm2, norm3;
    std::shared_ptr<Dropout> dropout;
};

}  // namespace xtgrad::nn::tutorial_b
