#include "nn/tutorial_a/masks.hpp"

#include "autograd/error.hpp"

namespace xtgrad::nn::tutorial_a {

namespace {
void require_2d(const char* fn, const char* what, const Ids& seq) {
    if (seq.dimension() != 2) fail("{}: {} must be (batch, len) token ids, got {}", fn, what, shape_str(seq.shape()));
}
}  // namespace

Mask padding_mask(const Ids& seq_k, const Ids& seq_q) {
    require_2d("padding_mask", "seq_k", seq_k);
    require_2d("padding_mask", "seq_q", seq_q);
    if (seq_k.shape(0) != seq_q.shape(0))
        fail("padding_mask: seq_k {} and seq_q {} differ in batch size", shape_str(seq_k.shape()),
             shape_str(seq_q.shape()));
    const std::size_t B = seq_k.shape(0), Lq = seq_q.shape(1), Lk = seq_k.shape(1);
    Mask mask = Mask::from_shape({B, Lq, Lk});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t i = 0; i < Lq; ++i)
            for (std::size_t j = 0; j < Lk; ++j) mask(b, i, j) = seq_k(b, j) == 0;
    return mask;
}

Mask sequence_mask(const Ids& seq) {
    require_2d("sequence_mask", "seq", seq);
    const std::size_t B = seq.shape(0), L = seq.shape(1);
    Mask mask = Mask::from_shape({B, L, L});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t i = 0; i < L; ++i)
            for (std::size_t j = 0; j < L; ++j) mask(b, i, j) = j > i;
    return mask;
}

Mask decoder_self_mask(const Ids& seq) {
    Mask mask = padding_mask(seq, seq);
    const Mask future = sequence_mask(seq);
    for (std::size_t i = 0; i < mask.size(); ++i) mask.data()[i] = mask.data()[i] || future.data()[i];
    return mask;
}

}  // namespace xtgrad::nn::tutorial_a
