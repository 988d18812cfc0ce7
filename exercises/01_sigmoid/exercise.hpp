// Exercise 01: your first op, forward and backward, with make_result (docs/learn/01_first_op.md).
#pragma once

#include <xtgrad/xtgrad.hpp>

namespace ex01 {

// σ(x) = 1 / (1 + e^(−x)), elementwise, with its own backward node "SigmoidBackward".
xtgrad::Tensor sigmoid(const xtgrad::Tensor& x);

}  // namespace ex01
