// The op tables' shared parts (ops_test.cpp: gradgradcheck per op; jvp_test.cpp: jvpcheck per
// op): a case, the counter that runs a check over a table, the inputs both tables need, and the
// cases both run.
#pragma once

#include <xtgrad/autograd/gradcheck.hpp>
#include <xtgrad/autograd/ops.hpp>
#include "tests/test_util.hpp"

#include <doctest/doctest.h>

#include <limits>
#include <string>
#include <vector>

namespace xtgrad::test {

struct OpCase {
    std::string name;
    GradcheckFn f;
    std::vector<Tensor> inputs;
};

// How many of the cases pass `check` (gradgradcheck, jvpcheck: anything returning a result
// with `passed` and `message()`); each failure is reported with the case's name and message.
template <class Check>
std::size_t passing(const std::vector<OpCase>& cases, Check check) {
    std::size_t passed = 0;
    for (const OpCase& c : cases) {
        const auto r = check(c.f, c.inputs);
        if (r.passed) ++passed;
        else FAIL_CHECK(c.name << ": " << r.message());
    }
    return passed;
}

// away from 0, so relu's kink and |x|'s are not inside a finite-difference step
inline Tensor away_from_zero(const Shape& s, std::uint64_t seed) {
    Tensor t = rnd(s, seed);
    for (float& v : t.mutable_data()) v = v < 0 ? v - 0.3f : v + 0.3f;
    return t;
}

// (3, 4): query i sees keys up to i + 1
inline const Mask& causal_mask_3x4() {
    static const Mask m = [] {
        Mask a = xt::zeros<bool>(Shape{3, 4});
        for (std::size_t i = 0; i < 3; ++i)
            for (std::size_t j = i + 2; j < 4; ++j) a(i, j) = true;
        return a;
    }();
    return m;
}

// The fused attention nodes (autograd/ops.hpp) on small blocks: masks, an additive
// mask, dropout, packed heads; both tables run every case.
inline std::vector<OpCase> attention_cases() {
    using V = std::vector<Tensor>;
    constexpr float kInf = std::numeric_limits<float>::infinity();
    return {
        {"attention_weights (mask, additive)",
         [](const V& x) { return attention_weights(x[0], x[1], 0.5f, &causal_mask_3x4(), -kInf, x[2]); },
         {rnd({2, 3, 2}, 83), rnd({2, 4, 2}, 84), rnd({3, 4}, 85)}},
        {"attention_weights plain", [](const V& x) { return attention_weights(x[0], x[1], 0.7f, nullptr, 0.f); },
         {rnd({3, 2}, 86), rnd({4, 2}, 87)}},
        {"dropout_matmul", [](const V& x) {
             Generator g(9);
             return dropout_matmul(x[0], x[1], 0.3f, true, g);
         },
         {rnd({2, 3, 4}, 88), rnd({2, 4, 2}, 89)}},
        {"attention_context (mask, dropout)", [](const V& x) {
             Generator g(10);
             return attention_context(x[0], x[1], x[2], 0.7f, &causal_mask_3x4(), -1e9f, Tensor(), 0.25f, true, g);
         },
         {rnd({2, 3, 2}, 90), rnd({2, 4, 2}, 91), rnd({2, 4, 3}, 92)}},
        {"attention_context_heads (additive)", [](const V& x) {
             Generator g(11);
             return attention_context_heads(x[0], x[1], x[2], 2, 0.7f, nullptr, 0.f, x[3], 0.f, false, g);
         },
         {rnd({1, 3, 4}, 93), rnd({1, 2, 4}, 94), rnd({1, 2, 6}, 95), rnd({3, 2}, 96)}},
        {"attention_context_heads (dropout)", [](const V& x) {
             Generator g(12);
             return attention_context_heads(x[0], x[1], x[2], 2, 0.5f, nullptr, 0.f, Tensor(), 0.3f, true, g);
         },
         {rnd({2, 3, 4}, 97), rnd({2, 3, 4}, 98), rnd({2, 3, 4}, 99)}},
    };
}

}  // namespace xtgrad::test
