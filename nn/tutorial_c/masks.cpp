// Tutorial C's names for the masks every tutorial builds the same way (nn/attention.hpp).
#include <xtgrad/nn/tutorial_c/masks.hpp>

#include <xtgrad/nn/attention.hpp>

namespace xtgrad::nn::tutorial_c {

Mask get_attn_pad_mask(const Ids& seq_q, const Ids& seq_k) {
    return key_padding_mask(seq_q, seq_k, "tutorial_c::get_attn_pad_mask");
}

Mask get_attn_subsequent_mask(const Ids& seq) { return subsequent_mask(seq, "tutorial_c::get_attn_subsequent_mask"); }

Mask get_dec_self_attn_mask(const Ids& dec_inputs) {
    return decoder_self_mask(dec_inputs, "tutorial_c::get_dec_self_attn_mask");
}

}  // namespace xtgrad::nn::tutorial_c
