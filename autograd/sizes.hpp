// Checked size arithmetic: every element count and index range that comes from a user's shape or
// arguments goes through here, so an overflow is an Error instead of a short allocation and
// out-of-range writes.
#pragma once

#include <xtgrad/autograd/error.hpp>

#include <cstddef>
#include <limits>
#include <vector>

namespace xtgrad {

// The element count of `shape` (0 if any dim is 0, however large the others), or an Error naming
// `who` when it, or its size in bytes as float32, does not fit in a size_t.
inline std::size_t checked_numel(const std::vector<std::size_t>& shape, const char* who) {
    for (std::size_t d : shape)
        if (d == 0) return 0;
    std::size_t n = 1;
    for (std::size_t d : shape)
        if (__builtin_mul_overflow(n, d, &n) || n > std::numeric_limits<std::size_t>::max() / sizeof(float))
            fail("{}: shape {} has more elements than fit in memory (the element count overflows)", who,
                 shape_str(shape));
    return n;
}

}  // namespace xtgrad
