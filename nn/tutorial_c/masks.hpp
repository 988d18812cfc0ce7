// Tutorial C's masks ("4. 代码实现": get_attn_pad_mask, get_attn_subsequent_mask, and the
// decoder's dec_self_attn_mask). All bool, True = masked (not attended), as C's
// ScaledDotProductAttention fills them with -1e9. Id 0 is PAD.
//
//   get_attn_pad_mask(seq_q, seq_k)   (B, Lq, Lk): True where the *key* seq_k[b, k] is PAD.
//                                     Argument order (queries, keys): the decoder's cross
//                                     attention mask is get_attn_pad_mask(dec_inputs, enc_inputs).
//   get_attn_subsequent_mask(seq)     (B, L, L): True strictly above the diagonal (a query may
//                                     not see later keys); the tutorial builds it with
//                                     np.triu(ones, k=1) as uint8.
//   get_dec_self_attn_mask(seq)       (B, L, L): pad OR subsequent, the tutorial's
//                                     torch.gt(pad_mask + subsequent_mask, 0).
#pragma once

#include <xtgrad/autograd/array.hpp>

namespace xtgrad::nn::tutorial_c {

Mask get_attn_pad_mask(const Ids& seq_q, const Ids& seq_k);
Mask get_attn_subsequent_mask(const Ids& seq);
Mask get_dec_self_attn_mask(const Ids& dec_inputs);

}  // namespace xtgrad::nn::tutorial_c
