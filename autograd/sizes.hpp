// Checked size arithmetic: every element count and index range that comes from a user's shape or
// arguments goes through here, so an overflow is an Error instead of a short allocation and
// out-of-range writes.
#pragma once

#include <xtgrad/autograd/array_allocator.hpp>
#include <xtgrad/autograd/error.hpp>

#include <cstddef>
#include <limits>
#include <vector>

namespace xtgrad {

// The element count of `shape` (0 if any dim is 0, however large the others), or an Error naming
// `who` when its size in bytes as float32 is more than a process can address
// (memory::kMaxArrayBytes; the count overflowing a size_t included).
inline std::size_t checked_numel(const std::vector<std::size_t>& shape, const char* who) {
    for (std::size_t d : shape)
        if (d == 0) return 0;
    std::size_t n = 1;
    for (std::size_t d : shape)
        if (__builtin_mul_overflow(n, d, &n) || n > memory::kMaxArrayBytes / sizeof(float))
            fail("{}: shape {} has more elements than fit in memory (more than {} bytes as float32)", who,
                 shape_str(shape), memory::kMaxArrayBytes);
    return n;
}

}  // namespace xtgrad
