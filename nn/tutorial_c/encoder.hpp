// Tutorial C, "4. 代码实现": class Encoder.
//
//   enc_outputs = token_emb(enc_inputs) + pos_emb(positions)        (B, Ls, d)
//   enc_self_attn_mask = get_attn_pad_mask(enc_inputs, enc_inputs)   (B, Ls, Ls)
//   for each layer: enc_outputs, attn = layer(enc_outputs, enc_self_attn_mask)
// returns enc_outputs and every layer's attention map (B, h, Ls, Ls).
//
// pos_emb is Embedding.from_pretrained(get_sinusoid_encoding_table(src_len + 1, d_model),
// freeze=True): a frozen parameter (in named_parameters() and the state_dict as
// pos_emb.weight, never trained). State: token_emb.weight, pos_emb.weight, layers.{i}.*.
//
// Errata (docs/tutorial_c.md): the tutorial looks up pos_emb(LongTensor([[1,2,3,4,5,6,0]])),
// hard-coded for its one 7-word sentence: the 7th word gets position 0 (PAD's), and any
// other length or batch breaks. xtgrad uses 1..len at real tokens and 0 at PAD
// (positions.hpp); positions(PositionScheme::literal) reproduces the tutorial's rows.
#pragma once

#include <xtgrad/nn/layers.hpp>
#include <xtgrad/nn/module.hpp>
#include <xtgrad/nn/tutorial_c/config.hpp>
#include <xtgrad/nn/tutorial_c/encoder_layer.hpp>

#include <memory>
#include <vector>

namespace xtgrad::nn::tutorial_c {

struct EncoderOutput {
    Tensor enc_outputs;                  // (B, Ls, d)
    std::vector<Tensor> enc_self_attns;  // per layer, (B, h, Ls, Ls)
};

class Encoder : public Module {
public:
    explicit Encoder(const Config& options);
    EncoderOutput forward(const Ids& enc_inputs) const;  // enc_inputs (B, Ls), 0 = PAD, Ls <= src_len

    Config options;
    std::shared_ptr<Embedding> token_emb, pos_emb;
    std::shared_ptr<ModuleList<EncoderLayer>> layers;
};

}  // namespace xtgrad::nn::tutorial_c
