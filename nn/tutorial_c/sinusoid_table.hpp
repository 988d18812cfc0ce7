// Tutorial C, "4. 代码实现": get_sinusoid_encoding_table(n_position, d_model).
//
//   angle(p, j) = p / 10000^(2·(j // 2) / d_model)        p = 0 .. n_position - 1, j = 0 .. d_model - 1
//   table[p, j] = sin(angle) for even j, cos(angle) for odd j
//
// Computed in double (the tutorial uses numpy float64) and rounded once to float32 (its
// torch.FloatTensor). Row p is position p, so row 0 is [sin 0, cos 0, ...] = [0, 1, 0, 1, ...],
// not zeros: the table has no PAD row, and a position-0 lookup adds [0, 1, 0, 1, ...].
// Compare tutorial A, whose table puts a zero row in front (docs/tutorial_c.md).
// The Encoder/Decoder use it as a frozen Embedding of n_position = max_len + 1 rows.
#pragma once

#include <xtgrad/autograd/tensor.hpp>

#include <cstddef>

namespace xtgrad::nn::tutorial_c {

// -> (n_position, d_model), no gradient.
Tensor get_sinusoid_encoding_table(std::size_t n_position, std::size_t d_model);

}  // namespace xtgrad::nn::tutorial_c
