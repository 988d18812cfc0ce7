// The array types under every xtgrad tensor.
//
// Array is a row-major float32 xtensor container; Ids holds int64 token ids, Mask holds
// booleans. Rule of the code base (see docs/architecture.md): never store an xtensor
// expression in `auto` and never return one from a function — name the container type, so
// every expression is evaluated before the operands it refers to go away. Reductions that
// keep dimensions go through the helpers in autograd/reduce_kernels.hpp, never a lazy reducer that keeps dimensions.
#pragma once

#include "autograd/sizes.hpp"

#include <xtensor/xarray.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace xtgrad {

using Array = xt::xarray<float, xt::layout_type::row_major>;
using Ids = xt::xarray<std::int64_t, xt::layout_type::row_major>;
using Mask = xt::xarray<bool, xt::layout_type::row_major>;
using Shape = std::vector<std::size_t>;

// An uninitialised array of the given shape (no braced-list temporary, no copy); a shape whose
// element count overflows is an Error.
inline Array empty_array(const Shape& shape) {
    checked_numel(shape, "tensor");
    return Array::from_shape(shape);
}

inline Shape shape_of(const Array& a) { return Shape(a.shape().begin(), a.shape().end()); }

}  // namespace xtgrad
