// The input step the notebook's Encoder and Decoder share:
//   output = seq_embedding(inputs) + pos_embedding(inputs_len)
// with the checks that make a mistake readable: ids inside the vocabulary, one length per
// sequence, and the longest length equal to the padded length (otherwise the two (B, L, d)
// tensors could not be added).
#pragma once

#include <xtgrad/nn/layers.hpp>
#include <xtgrad/nn/tutorial_a/positional_encoding.hpp>

namespace xtgrad::nn::tutorial_a {

// inputs (B, L) ids in [0, vocab_size], inputs_len (B) -> (B, L, d). `owner` and `type` name the
// Encoder or Decoder in errors.
Tensor embed_sequence(const Module& owner, const char* type, const Embedding& seq_embedding,
                      const PositionalEncoding& pos_embedding, const Ids& inputs, const Ids& inputs_len);

}  // namespace xtgrad::nn::tutorial_a
