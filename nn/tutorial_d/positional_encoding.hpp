// Tutorial D, "位置编码": positional_encoding(X, num_features, dropout_p=0.1, max_len=512).
//
// The sinusoid table, built in float32 exactly as the tutorial builds it:
//   angle[pos, i] = pos / 10000^(2i / E)          (float32 arange, torch.pow, float32 division)
//   P[pos, 2i]    = sin(angle[pos, i])
//   P[pos, 2i+1]  = cos(angle[pos, i])
// and returns dropout(X + P), P indexed along X's *sequence* axis.
//
// Where the tutorial differs (docs/tutorial_d.md, "Errata"):
//  * it always indexes X.shape[1]: right for its documented batch-first [N, L, E], wrong for
//    the sequence-first [L, N, E] its own Transformer uses, where it adds the encoding of the
//    batch index. xtgrad takes the sequence axis as an argument (0 for [L, N, E]).
//  * it builds a fresh nn.Dropout inside the function, which is in training mode, so it
//    drops even at inference. xtgrad's function takes `training` as F.dropout does (default
//    true, the tutorial's behaviour); TransformerEncoder passes its own mode.
//  * it needs an even num_features (P[:, :, 1::2] would not fit an odd one) and
//    L <= max_len; xtgrad says so in an Error instead of a broadcasting failure.
#pragma once

#include <xtgrad/random/random.hpp>
#include <xtgrad/autograd/tensor.hpp>

#include <cstddef>

namespace xtgrad::nn::tutorial_d {

// P[:len] as a (len, num_features) tensor (no gradient).
Tensor positional_table(std::size_t len, std::size_t num_features);

// X (3-D, sequence along seq_axis, features last) -> dropout(X + P[:L], dropout_p, training).
// seq_axis 1 = the tutorial's [N, L, E]; 0 = sequence-first [L, N, E]. gen null = default_generator().
Tensor positional_encoding(const Tensor& X, std::size_t num_features, float dropout_p = 0.1f, std::size_t max_len = 512,
                           int seq_axis = 1, bool training = true, Generator* gen = nullptr);

}  // namespace xtgrad::nn::tutorial_d
