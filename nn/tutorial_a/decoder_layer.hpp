// Tutorial A, "Decoder的实现": class DecoderLayer.
//
//   x, self_attention    = self_attention(dec_inputs, dec_inputs, dec_inputs, self_attn_mask)
//   x, context_attention = context_attention(key=enc_outputs, value=enc_outputs, query=x, context_attn_mask)
//   output               = feed_forward(x)
// Each step adds its residual and applies its LayerNorm inside the module.
//
// Erratum: the notebook builds one MultiHeadAttention (self.attention) and calls it for
// both steps, so self-attention and encoder-decoder attention share every weight. Intent,
// and xtgrad: two independent modules, self_attention and context_attention.
#pragma once

#include <xtgrad/nn/tutorial_a/layer_options.hpp>
#include <xtgrad/nn/tutorial_a/multi_head_attention.hpp>
#include <xtgrad/nn/tutorial_a/positional_wise_feed_forward.hpp>

#include <memory>

namespace xtgrad::nn::tutorial_a {

struct DecoderLayerOutput {
    Tensor output;             // (B, Lt, d)
    Tensor self_attention;     // (B·h, Lt, Lt)
    Tensor context_attention;  // (B·h, Lt, Ls)
};

class DecoderLayer : public Module {
public:
    explicit DecoderLayer(const DecoderLayerOptions& o);
    DecoderLayer(std::size_t model_dim = 512, std::size_t num_heads = 8, std::size_t ffn_dim = 2048, float dropout = 0.f,
                 const Errata& options = {})
        : DecoderLayer(DecoderLayerOptions(model_dim, num_heads).ffn_dim(ffn_dim).dropout(dropout).errata(options)) {}

    // dec_inputs (B, Lt, d), enc_outputs (B, Ls, d); self_attn_mask (B, Lt, Lt) = PAD or future
    // keys, context_attn_mask (B, Lt, Ls) = padding_mask(src, tgt); either may be null.
    DecoderLayerOutput forward(const Tensor& dec_inputs, const Tensor& enc_outputs, const Mask* self_attn_mask = nullptr,
                               const Mask* context_attn_mask = nullptr) const;

    std::shared_ptr<MultiHeadAttention> self_attention, context_attention;
    std::shared_ptr<PositionalWiseFeedForward> feed_forward;
};

}  // namespace xtgrad::nn::tutorial_a
