// Tutorial C, "4. 代码实现": class EncoderLayer.
//
//   enc_outputs, attn = enc_self_attn(enc_inputs, enc_inputs, enc_inputs, enc_self_attn_mask)
//   enc_outputs       = pos_ffn(enc_outputs)
// Both sub-layers carry their own residual and LayerNorm (post-norm), so the layer adds
// none. State: enc_self_attn.* (MultiHeadAttention), pos_ffn.* (PoswiseFeedForwardNet).
#pragma once

#include <xtgrad/nn/module.hpp>
#include <xtgrad/nn/tutorial_c/layer_options.hpp>
#include <xtgrad/nn/tutorial_c/multi_head_attention.hpp>
#include <xtgrad/nn/tutorial_c/poswise_feed_forward_net.hpp>

#include <memory>

namespace xtgrad::nn::tutorial_c {

struct EncoderLayerOutput {
    Tensor enc_outputs;  // (B, L, d)
    Tensor attn;         // (B, h, L, L)
};

class EncoderLayer : public Module {
public:
    XTGRAD_OPTIONS_CONSTRUCTORS(EncoderLayer);
    // enc_inputs (B, L, d), enc_self_attn_mask (B, L, L) True = masked.
    EncoderLayerOutput forward(const Tensor& enc_inputs, const Mask& enc_self_attn_mask) const;

    std::shared_ptr<MultiHeadAttention> enc_self_attn;
    std::shared_ptr<PoswiseFeedForwardNet> pos_ffn;
};

}  // namespace xtgrad::nn::tutorial_c
