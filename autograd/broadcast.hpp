// NumPy/PyTorch broadcasting: shapes are right-aligned; a dimension of 1 stretches.
#pragma once

#include <xtgrad/autograd/array.hpp>

#include <cstddef>
#include <vector>

namespace xtgrad {

// The broadcast shape of a and b, or an Error naming `op` and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// True if `from` broadcasts to `to` (every dim of `from` is 1 or equal, right-aligned).
bool broadcasts_to(const Shape& from, const Shape& to);

// Reading a broadcast operand in place, without a broadcast copy: `from`'s element stride along
// each axis of a rank-`rank` shape it broadcasts to (contiguous, row-major), 0 along its size-1
// axes and the leading axes it lacks. Requires from.size() <= rank.
std::vector<std::size_t> broadcast_strides(const Shape& from, std::size_t rank);

// For each index over the first `axes` axes of `to`, in row-major order, the offset
// sum(index[i] · strides[i]): with broadcast_strides, where each block of `to`'s remaining axes
// starts in the operand it was broadcast from. More offsets than memory holds: an Error naming op.
std::vector<std::size_t> strided_offsets(const Shape& to, std::size_t axes, const std::vector<std::size_t>& strides,
                                         const char* op = "broadcast");

// The inverse of broadcasting, for gradients: sums g over the dimensions along which
// `target` was stretched. Requires broadcasts_to(target, shape(g)).
Array sum_to_shape(const Array& g, const Shape& target);

}  // namespace xtgrad
