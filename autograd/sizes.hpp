// Checked size arithmetic: every element count and index range that comes from a user's shape or
// arguments goes through here, so an overflow is an Error instead of a short allocation and
// out-of-range writes.
#pragma once

#include <xtgrad/autograd/array_allocator.hpp>
#include <xtgrad/autograd/error.hpp>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

namespace xtgrad {

// The element count of `shape`, or an Error naming `who` when its size in bytes as float32 is more
// than a process can address (memory::kMaxArrayBytes; the count overflowing a size_t included).
// An empty shape (a dim of 0) has 0 elements however large the others, but the dims after its
// last 0 must multiply to a stride a long holds: (0, 2^32, 2^32)'s first stride, 2^64, overflows
// ((2^61, 0) and its transpose (0, 2^61) are fine).
inline std::size_t checked_numel(const std::vector<std::size_t>& shape, const char* who) {
    const auto last_zero = std::find(shape.rbegin(), shape.rend(), std::size_t{0});
    std::size_t n = 1;
    if (last_zero != shape.rend()) {
        constexpr auto kMaxStride = static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max());
        for (auto d = shape.rbegin(); d != last_zero; ++d)
            if (__builtin_mul_overflow(n, *d, &n) || n > kMaxStride)
                fail("{}: shape {} is empty, but its dims after the last 0 multiply past {}, more than an "
                     "array's strides may hold", who, shape_str(shape), kMaxStride);
        return 0;
    }
    for (std::size_t d : shape)
        if (__builtin_mul_overflow(n, d, &n) || n > memory::kMaxArrayBytes / sizeof(float))
            fail("{}: shape {} has more elements than fit in memory (more than {} bytes as float32)", who,
                 shape_str(shape), memory::kMaxArrayBytes);
    return n;
}

}  // namespace xtgrad
