// Tutorial B, "EncoderLayer": class EncoderLayer(d_model, num_heads, d_ff, dropout).
//
// Post-norm: each sub-layer's output is dropped out, added to its input, then normalised.
//   x = norm1(x + dropout(self_attn(x, x, x, mask)))
//   x = norm2(x + dropout(feed_forward(x)))
// State: self_attn.W_{q,k,v,o}.*, feed_forward.fc{1,2}.*, norm1.*, norm2.* (torch LayerNorm,
// eps 1e-5). The mask is B's src_mask (B, 1, 1, L), True = keep.
#pragma once

#include <xtgrad/nn/layers.hpp>
#include <xtgrad/nn/module.hpp>
#include <xtgrad/nn/tutorial_b/layer_options.hpp>
#include <xtgrad/nn/tutorial_b/multi_head_attention.hpp>
#include <xtgrad/nn/tutorial_b/position_wise_feed_forward.hpp>

#include <memory>

namespace xtgrad::nn::tutorial_b {

class EncoderLayer : public Module {
public:
    explicit EncoderLayer(const EncoderLayerOptions& options);
    EncoderLayer(std::size_t d_model, std::size_t num_heads, std::size_t d_ff, float dropout)
        : EncoderLayer(EncoderLayerOptions(d_model, num_heads, d_ff).dropout(dropout)) {}
    Tensor forward(const Tensor& x, const Mask& mask) const;  // x (B, L, d) -> (B, L, d)

    std::shared_ptr<MultiHeadAttention> self_attn;
    std::shared_ptr<PositionWiseFeedForward> feed_forward;
    std::shared_ptr<LayerNorm> norm1, norm2;
    std::shared_ptr<Dropout> dropout;
};

}  // namespace xtgrad::nn::tutorial_b
