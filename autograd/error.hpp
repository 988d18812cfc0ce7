// xtgrad::Error — the one exception type of the library.
//
// Every shape, axis, index, dtype or file mistake throws an Error whose message names the
// op or module at fault and the shapes or values involved, e.g.
//   matmul: cannot multiply (2,3) by (4,5): inner dimensions 3 and 4 differ
// Use fail("op: ...", args...) (fmt syntax) to throw one. Raised while a module's forward runs,
// the message also names that module by its path, e.g. "... (in module 'encoder.layers.0.pos_ffn')",
// so an op's error inside a model says which layer fed it.
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

namespace detail {
// message + " (in module 'PATH')" while a module's forward runs (autograd/grad_mode.hpp's
// module scope), unless the message names that path already; message unchanged otherwise.
std::string with_module_context(std::string message);
}  // namespace detail

template <class... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
    throw Error(detail::with_module_context(fmt::format(format, std::forward<Args>(args)...)));
}

namespace detail {
// Runs a user's callback (a gradient hook): an Error passes as it is; any other exception
// becomes an Error naming the hook (`who()`, built only then), so a backward that a hook
// stopped throws the library's one type.
template <class Call, class Who>
decltype(auto) call_user_hook(Call&& call, Who&& who) {
    try {
        return call();
    } catch (const Error&) {
        throw;
    } catch (const std::exception& e) {
        fail("{} threw: {}", who(), e.what());
    } catch (...) {
        fail("{} threw a non-standard exception", who());
    }
}
}  // namespace detail

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
