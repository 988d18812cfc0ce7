// Tutorial C, "4. 代码实现": class Transformer (the Winter Games translator).
//
//   enc_outputs, enc_self_attns = encoder(enc_inputs)
//   dec_outputs, dec_self_attns, dec_enc_attns = decoder(dec_inputs, enc_inputs, enc_outputs)
//   dec_logits = projection(dec_outputs)               Linear(d_model, tgt_vocab_size, bias=False)
//   return dec_logits.view(-1, tgt_vocab_size), enc_self_attns, dec_self_attns, dec_enc_attns
//
// forward returns the logits (B·Lt, V) (train them with cross_entropy against the targets
// flattened to (B·Lt)) and every layer's attention maps, which the tutorial's showgraph
// plots (the first head of the last layer). State: encoder.*, decoder.*, projection.weight.
//
// greedy_decode is the translation the tutorial does not do (errata, docs/tutorial_c.md):
// its test feeds the whole reference target in and reads the argmax at every position
// (teacher forcing), which needs the answer. A translation starts from 'S' and feeds
// each predicted word back in until 'E'.
#pragma once

#include <xtgrad/nn/layers.hpp>
#include <xtgrad/nn/module.hpp>
#include <xtgrad/nn/tutorial_c/config.hpp>
#include <xtgrad/nn/tutorial_c/decoder.hpp>
#include <xtgrad/nn/tutorial_c/encoder.hpp>

#include <cstdint>
#include <memory>
#include <vector>

namespace xtgrad::nn::tutorial_c {

struct TransformerOutput {
    Tensor logits;                       // (B·Lt, tgt_vocab_size)
    std::vector<Tensor> enc_self_attns;  // per layer, (B, h, Ls, Ls)
    std::vector<Tensor> dec_self_attns;  // per layer, (B, h, Lt, Lt)
    std::vector<Tensor> dec_enc_attns;   // per layer, (B, h, Lt, Ls)
};

class Transformer : public Module {
public:
    explicit Transformer(const Config& options = {});

    // enc_inputs (B, Ls), dec_inputs (B, Lt) ids, 0 = PAD.
    TransformerOutput forward(const Ids& enc_inputs, const Ids& dec_inputs) const;

    // Greedy translation without gradients: encode once, then run the decoder on the prefix
    // [start_id, predicted...] and append the argmax of its last position, until every row
    // has predicted end_id or max_new_tokens words (default and upper bound: tgt_len, the
    // longest decoder input the position table allows). Returns (B, n): the predicted words,
    // each row ending in end_id if it got there, then PAD (0).
    Ids greedy_decode(const Ids& enc_inputs, std::int64_t start_id, std::int64_t end_id,
                      std::size_t max_new_tokens = 0) const;

    Config options;
    std::shared_ptr<Encoder> encoder;
    std::shared_ptr<Decoder> decoder;
    std::shared_ptr<Linear> projection;
};

}  // namespace xtgrad::nn::tutorial_c
