// The limits every file reader (io/npy.hpp, io/safetensors.hpp) applies to a shape read
// from a file before it allocates anything, so that a hostile header is an Error, never an
// overflowed size, a wrapped stride or a huge allocation.
#pragma once

#include <xtgrad/autograd/array.hpp>
#include <xtgrad/autograd/error.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

namespace xtgrad {

// numpy 2's NPY_MAXDIMS; no model needs more, and it bounds the work per shape.
constexpr std::size_t kMaxFileRank = 64;

// At most this many elements, counting only the non-zero dimensions: xtensor computes the
// (signed) strides of every dimension even when another one is 0, and a reader converts the
// items into types of up to 8 bytes, so 16 * count must fit in ptrdiff_t.
constexpr std::uint64_t kMaxFileElements = std::numeric_limits<std::ptrdiff_t>::max() / 16;

// Why `shape` of `itemsize`-byte items cannot be read, or "" if it can: too many dimensions,
// or too many elements. On "", *bytes (if given) is prod(shape) * itemsize.
inline std::string shape_problem(const Shape& shape, std::size_t itemsize, std::uint64_t* bytes = nullptr) {
    if (shape.size() > kMaxFileRank)
        return fmt::format("{} dimensions, more than the {} a file may have", shape.size(), kMaxFileRank);
    std::uint64_t nonzero_product = 1;
    bool empty = false;
    for (std::size_t d : shape) {
        if (d == 0) {
            empty = true;
            continue;
        }
        if (__builtin_mul_overflow(nonzero_product, d, &nonzero_product) || nonzero_product > kMaxFileElements)
            return fmt::format("shape {} is too large (more than {} elements)", shape_str(shape), kMaxFileElements);
    }
    if (bytes != nullptr) *bytes = empty ? 0 : nonzero_product * itemsize;  // itemsize <= 16: no overflow
    return {};
}

}  // namespace xtgrad
