#include "tests/test_util.hpp"

#include <cmath>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;
using test::rnd;
using V = std::vector<Tensor>;

TEST_CASE("sum and mean over all elements and over axes") {
    Tensor a = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, true);
    CHECK(sum(a).item() == 21.f);
    CHECK(sum(a).shape() == Shape{});
    CHECK(mean(a).item() == 3.5f);
    CHECK(sum(a, {0}).data()(2) == 9.f);
    CHECK(sum(a, {1}, true).shape() == Shape{2, 1});
    CHECK(mean(a, {-1}).data()(1) == 5.f);
    Tensor b = rnd({2, 3, 4}, 1);
    CHECK(gradcheck([](const V& x) { return sum(x[0]); }, {b}));
    CHECK(gradcheck([](const V& x) { return sum(x[0], {0, 2}); }, {b}));
    CHECK(gradcheck([](const V& x) { return sum(x[0], {1}, true); }, {b}));
    CHECK(gradcheck([](const V& x) { return mean(x[0], {-1}); }, {b}));
    CHECK(gradcheck([](const V& x) { return mean(x[0]); }, {b}));
}

TEST_CASE("var and std, biased and unbiased") {
    Tensor a = Tensor::from_vector({1, 2, 3, 4}, {1, 4});
    CHECK(var(a, {1}).item() == doctest::Approx(5.f / 3.f));
    CHECK(var(a, {1}, false).item() == doctest::Approx(1.25f));
    CHECK(stddev(a, {1}, true, true).shape() == Shape{1, 1});
    Tensor b = rnd({3, 5}, 2);
    CHECK(gradcheck([](const V& x) { return var(x[0], {1}); }, {b}));
    CHECK(gradcheck([](const V& x) { return var(x[0], {0}, false, true); }, {b}));
    CHECK(gradcheck([](const V& x) { return stddev(x[0], {1}); }, {b}));
    CHECK(gradcheck([](const V& x) { return stddev(x[0], {0, 1}, false); }, {b}));
}

TEST_CASE("max and argmax") {
    Tensor a = Tensor::from_vector({1, 9, 3, 7, 2, 8}, {2, 3}, true);
    CHECK(max(a, 1).data()(0) == 9.f);
    CHECK(argmax(a, 1)(1) == 2);
    CHECK(argmax(a, 0, true).shape() == Ids::shape_type{1, 3});
    Tensor b = rnd({3, 4, 2}, 3);  // random values: no ties
    CHECK(gradcheck([](const V& x) { return max(x[0], 1); }, {b}));
    CHECK(gradcheck([](const V& x) { return max(x[0], -1, true); }, {b}));
}

TEST_CASE("reductions reject bad axes and empty means") {
    Tensor a = rnd({2, 3});
    test::expect_error([&] { sum(a, {2}); }, {"sum", "dim 2", "(2,3)"});
    test::expect_error([&] { sum(a, {1, -1}); }, {"sum", "same axis"});
    test::expect_error([&] { var(rnd({3, 1}), {1}); }, {"var", "unbiased"});
    test::expect_error([&] { max(a, 5); }, {"max", "dim 5"});
}

TEST_SUITE_END();

TEST_CASE("std of a constant row: gradient 0 (torch's std_backward), not 0 · inf = NaN; gradcheck elsewhere") {
    Tensor x = Tensor::from_vector({2.f, 2.f, 2.f, 1.f, 4.f, 7.f}, {2, 3}, true);
    Tensor s = stddev(x, {-1}, true, false);
    CHECK(s.grad_fn()->op() == "StdBackward");
    CHECK(s.data()(0) == 0.f);
    sum(s).backward();
    for (std::size_t j = 0; j < 3; ++j) CHECK(x.grad_array()(0, j) == 0.f);
    for (std::size_t j = 0; j < 3; ++j) CHECK(std::isfinite(x.grad_array()(1, j)));
    for (bool unbiased : {true, false})
        for (bool keepdim : {true, false})
            CHECK(gradcheck([=](const V& v) { return stddev(v[0], {1}, unbiased, keepdim); }, {rnd({3, 4}, 7)}));
    CHECK(gradcheck([](const V& v) { return stddev(v[0], {0, 2}, true, false); }, {rnd({2, 3, 4}, 8)}));
}
