// The op tables' shared parts (ops_test.cpp: gradgradcheck per op; jvp_test.cpp: jvpcheck per
// op): a case, the counter that runs a check over a table, and the inputs both tables need.
#pragma once

#include <xtgrad/autograd/gradcheck.hpp>
#include "tests/test_util.hpp"

#include <doctest/doctest.h>

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

}  // namespace xtgrad::test
