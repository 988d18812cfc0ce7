// Tutorial C's hyper-parameters ("4. 代码实现", the block after the corpus). The tutorial's
// classes read them as module-level globals (Encoder() takes no arguments); xtgrad passes
// them in one struct, with the tutorial's values as defaults.
#pragma once

#include "nn/tutorial_c/positions.hpp"

#include <cstddef>

namespace xtgrad::nn::tutorial_c {

struct Config {
    // The Winter Games vocabularies with the intended ids: PAD = 0 and one id per word.
    // The tutorial's dicts map 'I' to 0 (PAD) and Beijing/Winter/Games all to 4, giving
    // len(input_vocab) = 7 and len(output_vocab) = 8 (docs/tutorial_c.md, errata).
    std::size_t src_vocab_size = 8;  // input_vocab_size: P I like the 2022 Beijing Winter Games
    std::size_t tgt_vocab_size = 9;  // output_vocab_size: P 我 爱 2022 北京 冬 奥会 S E
    std::size_t src_len = 7;         // input_len: longest source; its position table has src_len + 1 rows
    std::size_t tgt_len = 7;         // output_len: longest decoder input
    std::size_t d_model = 512;       // embedding size
    std::size_t d_ff = 2048;         // hidden size of the position-wise FFN
    std::size_t d_k = 64;            // per-head size of queries and keys (need not be d_model / n_heads)
    std::size_t d_v = 64;            // per-head size of values
    std::size_t n_layers = 6;        // encoder layers, and decoder layers
    std::size_t n_heads = 8;
    PositionScheme positions = PositionScheme::sequential;  // literal: the tutorial's hard-coded rows
};

// Encoder, Decoder and Transformer all read the lesson's globals, so their options are this one
// struct (plain fields with designated initialisers, {.d_model = 64, .n_layers = 2}, rather than
// chained setters: the lesson's globals are one block of assignments).
using EncoderOptions = Config;
using DecoderOptions = Config;
using TransformerOptions = Config;

}  // namespace xtgrad::nn::tutorial_c
