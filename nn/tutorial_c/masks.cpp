#include "nn/tutorial_c/masks.hpp"

#include "autograd/error.hpp"

namespace xtgrad::nn::tutorial_c {

namespace {
void require_ids(const char* fn, const char* what, const Ids& ids) {
    if (ids.dimension() != 2) fail("tutorial_c::{}: {} must be (batch, len) ids, got {}", fn, what, shape_str(ids.shape()));
}
}  // namespace

Mask get_attn_pad_mask(const Ids& seq_q, const Ids& seq_k) {
    require_ids("get_attn_pad_mask", "seq_q", seq_q);
    require_ids("get_attn_pad_mask", "seq_k", seq_k);
    if (seq_q.shape(0) != seq_k.shape(0))
        fail("tutorial_c::get_attn_pad_mask: seq_q {} and seq_k {} differ in batch size", shape_str(seq_q.shape()),
             shape_str(seq_k.shape()));
    const std::size_t B = seq_q.shape(0), Lq = seq_q.shape(1), Lk = seq_k.shape(1);
    Mask mask = Mask::from_shape({B, Lq, Lk});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t q = 0; q < Lq; ++q)
            for (std::size_t k = 0; k < Lk; ++k) mask(b, q, k) = seq_k(b, k) == 0;
    return mask;
}

Mask get_attn_subsequent_mask(const Ids& seq) {
    require_ids("get_attn_subsequent_mask", "seq", seq);
    const std::size_t B = seq.shape(0), L = seq.shape(1);
    Mask mask = Mask::from_shape({B, L, L});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t q = 0; q < L; ++q)
            for (std::size_t k = 0; k < L; ++k) mask(b, q, k) = k > q;
    return mask;
}

Mask get_dec_self_attn_mask(const Ids& dec_inputs) {
    const Mask pad = get_attn_pad_mask(dec_inputs, dec_inputs);
    const Mask subsequent = get_attn_subsequent_mask(dec_inputs);
    return Mask(pad || subsequent);
}

}  // namespace xtgrad::nn::tutorial_c
