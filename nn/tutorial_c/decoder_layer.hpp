// Tutorial C, "4. 代码实现": class DecoderLayer.
//
//   dec_outputs, dec_self_attn = dec_self_attn(dec_inputs, dec_inputs, dec_inputs, dec_self_attn_mask)
//   dec_outputs, dec_enc_attn  = dec_enc_attn(dec_outputs, enc_outputs, enc_outputs, dec_enc_attn_mask)
//   dec_outputs                = pos_ffn(dec_outputs)
// The cross attention takes its queries from the decoder and its keys and values from the
// encoder. State: dec_self_attn.*, dec_enc_attn.* (two separate MultiHeadAttention),
// pos_ffn.*.
#pragma once

#include <xtgrad/nn/module.hpp>
#include <xtgrad/nn/tutorial_c/layer_options.hpp>
#include <xtgrad/nn/tutorial_c/multi_head_attention.hpp>
#include <xtgrad/nn/tutorial_c/poswise_feed_forward_net.hpp>

#include <memory>

namespace xtgrad::nn::tutorial_c {

struct DecoderLayerOutput {
    Tensor dec_outputs;    // (B, Lt, d)
    Tensor dec_self_attn;  // (B, h, Lt, Lt)
    Tensor dec_enc_attn;   // (B, h, Lt, Ls)
};

class DecoderLayer : public Module {
public:
    XTGRAD_OPTIONS_CONSTRUCTORS(DecoderLayer);
    // dec_inputs (B, Lt, d), enc_outputs (B, Ls, d), dec_self_attn_mask (B, Lt, Lt),
    // dec_enc_attn_mask (B, Lt, Ls); masks True = masked.
    DecoderLayerOutput forward(const Tensor& dec_inputs, const Tensor& enc_outputs, const Mask& dec_self_attn_mask,
                               const Mask& dec_enc_attn_mask) const;

    std::shared_ptr<MultiHeadAttention> dec_self_attn, dec_enc_attn;
    std::shared_ptr<PoswiseFeedForwardNet> pos_ffn;
};

}  // namespace xtgrad::nn::tutorial_c
