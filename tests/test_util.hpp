// Shared helpers of the test suite.
#pragma once

#include <xtgrad/xtgrad.hpp>
#include "tests/under_asan.hpp"

#include <doctest/doctest.h>

#include <functional>
#include <limits>
#include <set>
#include <string>

namespace xtgrad::test {

inline constexpr float kInf = std::numeric_limits<float>::infinity();

// Random leaf tensor that requires grad, deterministic per seed.
inline Tensor rnd(const Shape& shape, std::uint64_t seed = 0, float scale = 1.f) {
    Generator g(seed + 100);
    Tensor t = randn(shape, g);
    t.mutable_data() *= scale;
    t.requires_grad_(true);
    return t;
}

// Positive values away from 0 (log, sqrt, div).
inline Tensor positive(const Shape& shape, std::uint64_t seed = 0) {
    Generator g(seed + 200);
    return rand(shape, g, 0.5f, 2.f, true);
}

// CHECK_THROWS_WITH-like: the call throws xtgrad::Error whose message contains every part.
template <class F>
void expect_error(F&& f, std::initializer_list<const char*> parts) {
    try {
        f();
        FAIL("expected an xtgrad::Error");
    } catch (const Error& e) {
        const std::string msg = e.what();
        for (const char* p : parts) {
            const std::string why = std::string("'") + p + "' is not in: " + msg;
            CHECK_MESSAGE(msg.find(p) != std::string::npos, why);
        }
    }
}

// Options for a gradcheck over a whole model and its parameters (thousands of elements, each two
// forward passes): every element, except in the sanitizer build (~17x slower), where fast mode
// (one random direction per input) runs the same ops forward and backward for a fraction of the
// time and the release build's run of the same test checks every element.
inline GradcheckOptions model_gradcheck(GradcheckOptions options = {}) {
#if XTGRAD_UNDER_ASAN
    options.fast = true;
#endif
    return options;
}

inline float max_abs_diff(const Array& a, const Array& b) {
    REQUIRE(a.shape() == b.shape());
    float m = 0;
    for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a.data()[i] - b.data()[i]));
    return m;
}

// Every backward op name reachable from t's grad_fn (before backward, which releases the graph):
// which path a module took.
inline std::set<std::string> ops_behind(const Tensor& t) {
    std::set<std::string> ops;
    std::set<const Node*> seen;
    const std::function<void(const Node*)> walk = [&](const Node* n) {
        if (!n || !seen.insert(n).second) return;
        ops.insert(n->op());
        for (const auto& in : n->inputs()) walk(in->grad_fn.get());
    };
    walk(t.grad_fn().get());
    return ops;
}

}  // namespace xtgrad::test
