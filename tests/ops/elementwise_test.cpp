// gradcheck of the elementwise and activation ops, broadcasting included.
#include "tests/test_util.hpp"

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
