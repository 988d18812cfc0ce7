// Tutorial A, "Padding mask和sequence mask的实现": padding_mask and sequence_mask.
// Both are boolean, true = masked out (the attention score becomes -inf). PAD is id 0.
#pragma once

#include <xtgrad/autograd/array.hpp>

namespace xtgrad::nn::tutorial_a {

// seq_k (B, Lk), seq_q (B, Lq) -> (B, Lq, Lk): true where the *key* is PAD, the same for
// every query. Mind the argument order: keys first.
Mask padding_mask(const Ids& seq_k, const Ids& seq_q);

// seq (B, L) -> (B, L, L): true strictly above the diagonal, so query i sees keys 0..i.
// (The notebook builds it as uint8 with torch.triu(ones, diagonal=1).)
Mask sequence_mask(const Ids& seq);

// The Decoder's self-attention mask, gt(padding_mask(seq, seq) + sequence_mask(seq), 0):
// a key is hidden if it is PAD or in the future. (B, L) -> (B, L, L).
Mask decoder_self_mask(const Ids& seq);

}  // namespace xtgrad::nn::tutorial_a
