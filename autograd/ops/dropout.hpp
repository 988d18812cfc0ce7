// Dropout's mask, beside its op (ops/dropout.cpp): dropout and the fused attention ops that drop
// out their weights (ops/attention.cpp, ops/attention_context.cpp) draw it here, so their masks
// are torch's, number for number.
#pragma once

#include <xtgrad/autograd/ops.hpp>

#include <cstddef>

namespace xtgrad {

// Dropout's mask for a tensor of `shape`, drawn as torch 1.13 draws it (one bernoulli(1 - p) per
// element, in order, from `gen`): kept[i] = true where the element stays, scaled by `keep` =
// 1 / (1 - p). dropout and dropout_matmul draw through here, so their masks equal torch's.
struct DropoutMask {
    Mask kept;
    float keep;
};
DropoutMask draw_dropout_mask(const Shape& shape, float p, Generator& gen);
// An Error naming `op` unless 0 <= p <= 1.
void check_dropout_probability(float p, const char* op);

}  // namespace xtgrad
