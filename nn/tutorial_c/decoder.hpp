// Tutorial C, "4. 代码实现": class Decoder.
//
//   dec_outputs = output_token_emb(dec_inputs) + pos_emb(positions)        (B, Lt, d)
//   dec_self_attn_mask = get_attn_pad_mask(dec, dec) OR get_attn_subsequent_mask(dec)   (B, Lt, Lt)
//   dec_enc_attn_mask  = get_attn_pad_mask(dec_inputs, enc_inputs)                       (B, Lt, Ls)
//   for each layer: dec_outputs, dec_self_attn, dec_enc_attn = layer(dec_outputs, enc_outputs, masks)
// returns dec_outputs and every layer's self and cross attention maps.
//
// pos_emb is the frozen sinusoid table of tgt_len + 1 rows. State: output_token_emb.weight,
// pos_emb.weight (frozen), layers.{i}.*.
//
// Errata (docs/tutorial_c.md): the tutorial hard-codes pos_emb(LongTensor([[7,1,2,3,4,5,6]])),
// so the start token 'S' gets position 7 and the last word position 6; xtgrad uses 1..len
// (positions(PositionScheme::literal) reproduces the tutorial's rows).
#pragma once

#include <xtgrad/nn/layers.hpp>
#include <xtgrad/nn/module.hpp>
#include <xtgrad/nn/tutorial_c/config.hpp>
#include <xtgrad/nn/tutorial_c/decoder_layer.hpp>

#include <memory>
#include <vector>

namespace xtgrad::nn::tutorial_c {

struct DecoderOutput {
    Tensor dec_outputs;                  // (B, Lt, d)
    std::vector<Tensor> dec_self_attns;  // per layer, (B, h, Lt, Lt)
    std::vector<Tensor> dec_enc_attns;   // per layer, (B, h, Lt, Ls)
};

class Decoder : public Module {
public:
    explicit Decoder(const Config& options);
    // dec_inputs (B, Lt) and enc_inputs (B, Ls) ids (0 = PAD), enc_outputs (B, Ls, d).
    DecoderOutput forward(const Ids& dec_inputs, const Ids& enc_inputs, const Tensor& enc_outputs) const;

    Config options;
    std::shared_ptr<Embedding> output_token_emb, pos_emb;
    std::shared_ptr<ModuleList<DecoderLayer>> layers;
};

}  // namespace xtgrad::nn::tutorial_c
