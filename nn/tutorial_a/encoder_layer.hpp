// Tutorial A, "Encoder的实现": class EncoderLayer.
//
//   context, attention = attention(inputs, inputs, inputs, attn_mask)   self-attention (+ residual, LayerNorm)
//   output             = feed_forward(context)                          (+ residual, LayerNorm)
//
// Errata: the notebook passes the *function* padding_mask to the attention instead of its
// attn_mask argument (and `if attn_mask:` then tests the function object, which is always
// true); intent, and xtgrad: the attn_mask it was given. Its default ffn_dim is 2018, a typo
// for 2048 (the Encoder passes its own ffn_dim anyway); xtgrad defaults to 2048.
#pragma once

#include <xtgrad/nn/tutorial_a/layer_options.hpp>
#include <xtgrad/nn/tutorial_a/multi_head_attention.hpp>
#include <xtgrad/nn/tutorial_a/positional_wise_feed_forward.hpp>

#include <memory>

namespace xtgrad::nn::tutorial_a {

struct EncoderLayerOutput {
    Tensor output;     // (B, L, d)
    Tensor attention;  // (B·h, L, L)
};

class EncoderLayer : public Module {
public:
    explicit EncoderLayer(const EncoderLayerOptions& o);
    EncoderLayer(std::size_t model_dim = 512, std::size_t num_heads = 8, std::size_t ffn_dim = 2048, float dropout = 0.f,
                 const Errata& options = {})
        : EncoderLayer(EncoderLayerOptions(model_dim, num_heads).ffn_dim(ffn_dim).dropout(dropout).errata(options)) {}

    // inputs (B, L, d), attn_mask (B, L, L) true = masked (padding_mask(ids, ids)), or null.
    EncoderLayerOutput forward(const Tensor& inputs, const Mask* attn_mask = nullptr) const;

    std::shared_ptr<MultiHeadAttention> attention;
    std::shared_ptr<PositionalWiseFeedForward> feed_forward;
};

}  // namespace xtgrad::nn::tutorial_a
