// cross_entropy (autograd/ops/cross_entropy.cpp).
#include "tests/test_util.hpp"

#include <cmath>
#include <random>
#include <string>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;
using test::rnd;
using V = std::vector<Tensor>;

TEST_CASE("cross_entropy: values, ignore_index, label smoothing, gradcheck") {
    Tensor logits = Tensor::from_vector({2.f, 1.f, 0.1f, 0.5f, 2.5f, 0.3f}, {2, 3}, true);
    Ids t = {0, 1};
    // torch: F.cross_entropy(tensor([[2,1,.1],[.5,2.5,.3]]), tensor([0,1])) = 0.3185..
    const float l0 = 2.f - std::log(std::exp(2.f) + std::exp(1.f) + std::exp(0.1f));
    const float l1 = 2.5f - std::log(std::exp(0.5f) + std::exp(2.5f) + std::exp(0.3f));
    CHECK(cross_entropy(logits, t).item() == doctest::Approx(-(l0 + l1) / 2));
    CHECK(cross_entropy(logits, Ids{0, -100}).item() == doctest::Approx(-l0));
    Tensor big = rnd({5, 4}, 3, 3.f);
    Ids tt = {0, 3, 1, 0, 2};
    CHECK(gradcheck([tt](const V& x) { return cross_entropy(x[0], tt); }, {big}));
    CHECK(gradcheck([tt](const V& x) { return cross_entropy(x[0], tt, 0); }, {big}));
    CHECK(gradcheck([tt](const V& x) { return cross_entropy(x[0], tt, 0, 0.1f); }, {big}));
    Tensor huge = Tensor::from_vector({1000.f, -1000.f}, {1, 2});
    CHECK(std::isfinite(cross_entropy(huge, Ids{1}).item()));
    CHECK(cross_entropy(huge, Ids{1}).item() == doctest::Approx(2000.f));
}

TEST_CASE("cross_entropy rejects bad targets") {
    Tensor l = rnd({2, 3});
    test::expect_error([&] { cross_entropy(l, Ids{0, 3}); }, {"cross_entropy", "target 3", "3 classes"});
    test::expect_error([&] { cross_entropy(l, Ids{0}); }, {"cross_entropy", "(1)", "(2,3)"});
    test::expect_error([&] { cross_entropy(l, Ids{0, 0}, 0); }, {"cross_entropy", "ignore_index 0"});
}

TEST_SUITE_END();
