// The array types under every xtgrad tensor.
//
// Array is a row-major float32 xtensor container; Ids holds int64 token ids, Mask holds
// booleans. Rule of the code base (see docs/architecture.md): never store an xtensor
// expression in `auto` and never return one from a function — name the container type, so
// every expression is evaluated before the operands it refers to go away. Reductions that
// keep dimensions go through the helpers in autograd/reduce_kernels.hpp, never a lazy reducer that keeps dimensions.
#pragma once

#include <xtgrad/autograd/array_allocator.hpp>
#include <xtgrad/autograd/sizes.hpp>

#include <xtensor/xarray.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace xtgrad {

// The allocator is part of an xtensor container's type, and xsimd's default one takes its
// alignment from the compile flags (16 bytes for SSE, 32 for AVX2, 64 for AVX-512). With it,
// a program compiled with other -march flags than the library would name a different Array
// type and fail to link (or, through a template, silently mix two types). So Array's allocator
// is xtgrad's own (autograd/array_allocator.hpp): 64-byte blocks whatever the flags, a cache
// line and AVX-512's vector width, and large blocks kept for reuse without the heap's holes.
inline constexpr std::size_t kArrayAlignment = memory::kAlignment;
template <class T>
using RowMajorArray = xt::xarray<T, xt::layout_type::row_major, ArrayAllocator<T>>;

using Array = RowMajorArray<float>;
using Ids = RowMajorArray<std::int64_t>;
using Mask = RowMajorArray<bool>;
using Shape = std::vector<std::size_t>;

// An uninitialised array of the given shape (no braced-list temporary, no copy); a shape whose
// element count overflows is an Error.
inline Array empty_array(const Shape& shape) {
    checked_numel(shape, "tensor");
    return Array::from_shape(shape);
}

inline Shape shape_of(const Array& a) { return Shape(a.shape().begin(), a.shape().end()); }

}  // namespace xtgrad
