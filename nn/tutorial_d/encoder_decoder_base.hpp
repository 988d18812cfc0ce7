// What Transformer asks of its encoder and decoder: torch's custom_encoder / custom_decoder take
// any module that Transformer.forward can call as
//   memory = encoder(src, mask=src_mask, src_key_padding_mask=...)
//   output = decoder(tgt, memory, tgt_mask=..., memory_mask=..., tgt_key_padding_mask=...,
//                    memory_key_padding_mask=...)
// In C++ that module derives from EncoderBase / DecoderBase and overrides forward. It is a Module
// like any other: what it registers is the model's encoder.* / decoder.* state, trained and
// saved with the rest. TransformerEncoder and TransformerDecoder are the built-in ones.
#pragma once

#include <xtgrad/autograd/tensor.hpp>
#include <xtgrad/nn/module.hpp>
#include <xtgrad/nn/tutorial_d/attention_mask.hpp>

namespace xtgrad::nn::tutorial_d {

class EncoderBase : public Module {
public:
    // src (S, N, E), (N, S, E) batch first or (S, E) unbatched; returns memory, the decoder's input.
    // A module may ignore the masks (torch passes them all the same).
    virtual Tensor forward(const Tensor& src, const AttentionMask& mask = {},
                           const AttentionMask& src_key_padding_mask = {}) const = 0;
};

class DecoderBase : public Module {
public:
    // tgt (T, N, E), memory from the encoder; returns the shape of tgt.
    virtual Tensor forward(const Tensor& tgt, const Tensor& memory, const AttentionMask& tgt_mask = {},
                           const AttentionMask& memory_mask = {}, const AttentionMask& tgt_key_padding_mask = {},
                           const AttentionMask& memory_key_padding_mask = {}) const = 0;
};

}  // namespace xtgrad::nn::tutorial_d
