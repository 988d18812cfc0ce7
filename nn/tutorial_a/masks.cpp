// Tutorial A's names for the masks every tutorial builds the same way (nn/attention.hpp).
#include <xtgrad/nn/tutorial_a/masks.hpp>

#include <xtgrad/nn/attention.hpp>

namespace xtgrad::nn::tutorial_a {

Mask padding_mask(const Ids& seq_k, const Ids& seq_q) { return key_padding_mask(seq_q, seq_k, "padding_mask"); }

Mask sequence_mask(const Ids& seq) { return subsequent_mask(seq, "sequence_mask"); }

Mask decoder_self_mask(const Ids& seq) { return nn::decoder_self_mask(seq, "decoder_self_mask"); }

}  // namespace xtgrad::nn::tutorial_a
