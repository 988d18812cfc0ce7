// NumPy/PyTorch broadcasting: shapes are right-aligned; a dimension of 1 stretches.
#pragma once

#include <xtgrad/autograd/array.hpp>

namespace xtgrad {

// The broadcast shape of a and b, or an Error naming `op` and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// True if `from` broadcasts to `to` (every dim of `from` is 1 or equal, right-aligned).
bool broadcasts_to(const Shape& from, const Shape& to);

// The inverse of broadcasting, for gradients: sums g over the dimensions along which
// `target` was stretched. Requires broadcasts_to(target, shape(g)).
Array sum_to_shape(const Array& g, const Shape& target);

}  // namespace xtgrad
