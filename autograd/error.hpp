// xtgrad::Error — the one exception type of the library.
//
// Every shape, axis, index, dtype or file mistake throws an Error whose message names the
// op or module at fault and the shapes or values involved, e.g.
//   matmul: cannot multiply (2,3) by (4,5): inner dimensions 3 and 4 differ
// Use fail("op: ...", args...) (fmt syntax) to throw one.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace xtgrad {

class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

template <class... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
    throw Error(fmt::format(format, std::forward<Args>(args)...));
}

// "(2,3)" for any shape-like container; "()" for a scalar.
template <class ShapeLike>
std::string shape_str(const ShapeLike& shape) {
    std::string s = "(";
    bool first = true;
    for (auto d : shape) {
        if (!first) s += ",";
        s += std::to_string(d);
        first = false;
    }
    return s + ")";
}

}  // namespace xtgrad
