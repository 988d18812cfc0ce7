// Tutorial C's hyper-parameters ("4. 代码实现", the block after the corpus), as the options of
// its Encoder, Decoder and Transformer (nn/options.hpp):
//   Config().d_model(64).n_layers(2).positions(PositionScheme::literal)
// The tutorial's classes read them as module-level globals (Encoder() takes no arguments), so
// the three modules take this one type, named for what it is — the lesson's configuration — not
// <Module>Options; every field is optional and defaults to the lesson's value.
#pragma once

#include <xtgrad/nn/options.hpp>
#include <xtgrad/nn/tutorial_c/layer_options.hpp>
#include <xtgrad/nn/tutorial_c/positions.hpp>

#include <cstddef>

namespace xtgrad::nn::tutorial_c {

class Config {
    // The Winter Games vocabularies with the intended ids: PAD = 0 and one id per word.
    // The tutorial's dicts map 'I' to 0 (PAD) and Beijing/Winter/Games all to 4, giving
    // len(input_vocab) = 7 and len(output_vocab) = 8 (docs/tutorial_c.md, errata).
    XTGRAD_ARG(std::size_t, src_vocab_size) = 8;  // input_vocab_size: P I like the 2022 Beijing Winter Games
    XTGRAD_ARG(std::size_t, tgt_vocab_size) = 9;  // output_vocab_size: P 我 爱 2022 北京 冬 奥会 S E
    XTGRAD_ARG(std::size_t, src_len) = 7;  // input_len: longest source; its position table has src_len + 1 rows
    XTGRAD_ARG(std::size_t, tgt_len) = 7;  // output_len: longest decoder input
    XTGRAD_ARG(std::size_t, d_model) = 512;  // embedding size
    XTGRAD_ARG(std::size_t, d_ff) = 2048;    // hidden size of the position-wise FFN
    XTGRAD_ARG(std::size_t, d_k) = 64;       // per-head size of queries and keys (need not be d_model / n_heads)
    XTGRAD_ARG(std::size_t, d_v) = 64;       // per-head size of values
    XTGRAD_ARG(std::size_t, n_layers) = 6;   // encoder layers, and decoder layers
    XTGRAD_ARG(std::size_t, n_heads) = 8;
    XTGRAD_ARG(PositionScheme, positions) = PositionScheme::sequential;  // literal: the tutorial's hard-coded rows

public:
    // Every layer of the stacks reads the same globals.
    EncoderLayerOptions encoder_layer() const { return {d_model_, n_heads_, d_ff_, d_k_, d_v_}; }
    DecoderLayerOptions decoder_layer() const { return {d_model_, n_heads_, d_ff_, d_k_, d_v_}; }
};


}  // namespace xtgrad::nn::tutorial_c
