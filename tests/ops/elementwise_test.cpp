// gradcheck of the elementwise and activation ops, broadcasting included.
#include "tests/test_util.hpp"

#include <cmath>
#include <limits>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;
using test::positive;
using test::rnd;
using V = std::vector<Tensor>;

TEST_CASE("add, sub, mul, div broadcast and pass gradcheck") {
    Tensor a = rnd({2, 3, 4}, 1), b = rnd({3, 1}, 2), c = positive({4}, 3);
    CHECK(gradcheck([](const V& x) { return add(x[0], x[1]); }, {a, b}));
    CHECK(gradcheck([](const V& x) { return sub(x[0], x[1]); }, {a, b}));
    CHECK(gradcheck([](const V& x) { return mul(x[0], x[1]); }, {a, b}));
    CHECK(gradcheck([](const V& x) { return div(x[0], x[1]); }, {a, c}));
    CHECK(add(a, b).shape() == Shape{2, 3, 4});
}

TEST_CASE("scalar forms and neg") {
    Tensor a = rnd({3, 2}, 4), p = positive({3, 2}, 5);
    CHECK(gradcheck([](const V& x) { return x[0] * 3.f + 1.f; }, {a}));
    CHECK(gradcheck([](const V& x) { return 2.f - x[0] / 4.f; }, {a}));
    CHECK(gradcheck([](const V& x) { return 1.f / x[0]; }, {p}));
    CHECK(gradcheck([](const V& x) { return -x[0]; }, {a}));
    CHECK((a * 2.f).data()(1, 1) == doctest::Approx(2 * a.data()(1, 1)));
}

TEST_CASE("pow, exp, log, sqrt, tanh") {
    Tensor a = rnd({4, 3}, 6, 0.5f), p = positive({4, 3}, 7);
    CHECK(gradcheck([](const V& x) { return pow(x[0], 3.f); }, {a}));
    CHECK(gradcheck([](const V& x) { return pow(x[0], 0.5f); }, {p}));
    CHECK(gradcheck([](const V& x) { return exp(x[0]); }, {a}));
    CHECK(gradcheck([](const V& x) { return log(x[0]); }, {p}));
    CHECK(gradcheck([](const V& x) { return sqrt(x[0]); }, {p}));
    CHECK(gradcheck([](const V& x) { return tanh(x[0]); }, {a}));
}

TEST_CASE("binary ops name both shapes when they do not broadcast") {
    Tensor a = rnd({2, 3}), b = rnd({4});
    test::expect_error([&] { add(a, b); }, {"add", "(2,3)", "(4)"});
    test::expect_error([&] { mul(a, rnd({3, 3})); }, {"mul", "(2,3)", "(3,3)"});
}

TEST_SUITE_END();

TEST_CASE("relu keeps NaN (torch's relu does): a NaN unit reaches the loss and its guards") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    Tensor x = Tensor::from_vector({-1.f, nan, 2.f}, {3}, true);
    Tensor y = relu(x);
    CHECK(y.data()(0) == 0.f);
    CHECK(std::isnan(y.data()(1)));
    CHECK(y.data()(2) == 2.f);
    CHECK(std::isnan(sum(y).item()));
}

TEST_CASE("pow(x, 0): gradient 0 everywhere, x = 0 included (torch's pow_backward), not 0 · inf") {
    Tensor x = Tensor::from_vector({0.f, 2.f, -3.f}, {3}, true);
    sum(pow(x, 0.f)).backward();
    for (std::size_t i = 0; i < 3; ++i) CHECK(x.grad_array()(i) == 0.f);
}
