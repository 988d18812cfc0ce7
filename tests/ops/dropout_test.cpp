// dropout (autograd/ops/dropout.cpp).
#include "tests/test_util.hpp"

#include <cmath>
#include <random>
#include <string>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;
using test::rnd;
using V = std::vector<Tensor>;

TEST_CASE("dropout: identity in eval, inverted scaling in training, seeded") {
    Tensor a = Tensor::ones({1000}, true);
    Generator g1(7), g2(7);
    CHECK(dropout(a, 0.5f, false, g1).impl() == a.impl());
    Tensor d1 = dropout(a, 0.25f, true, g1), d2 = dropout(a, 0.25f, true, g2);
    CHECK(test::max_abs_diff(d1.data(), d2.data()) == 0.f);  // same seed, same mask
    std::size_t zeros = 0;
    for (float v : d1.data()) {
        CHECK((v == 0.f || v == doctest::Approx(1.f / 0.75f)));
        zeros += v == 0.f;
    }
    CHECK(zeros > 200);
    CHECK(zeros < 300);
    sum(d1).backward();
    CHECK(test::max_abs_diff(a.grad_array(), d1.data()) == 0.f);  // dy/dx = mask / (1-p)
    test::expect_error([&] { dropout(a, 1.5f, true, g1); }, {"dropout", "1.5"});
}

TEST_CASE("dropout keeps exactly where torch's bernoulli_(1 - p) does") {
    for (const float p : {0.1f, 0.25f, 0.5f, 0.9f}) {
        Generator g(11), ref(11);
        const Array d = dropout(Tensor::ones({4097}), p, true, g).data();
        std::size_t mismatches = 0;
        for (float v : d) mismatches += (v != 0.f) != (ref.uniform_double() < 1.0 - std::stod(fmt::format("{}", p)));
        CHECK(mismatches == 0);
    }
}

TEST_SUITE_END();
