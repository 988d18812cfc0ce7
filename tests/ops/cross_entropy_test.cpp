// cross_entropy (autograd/ops/cross_entropy.cpp).
#include "tests/test_util.hpp"

#include <limits>

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

TEST_CASE("cross_entropy: a -inf logit gives torch's loss, not NaN (0 · inf of the unused smoothing term)") {
    const float inf = std::numeric_limits<float>::infinity();
    // logits (1, 3) = [-inf, 1, 2], target 2: loss = log(e + e²) - 2 = log(1 + 1/e) ≈ 0.313262
    Tensor logits = Tensor::from_vector({-inf, 1.f, 2.f}, {1, 3}, true);
    Tensor loss = cross_entropy(logits, Ids{2});
    CHECK(loss.item() == doctest::Approx(std::log1p(std::exp(-1.0))).epsilon(1e-6));
    loss.backward();
    CHECK(logits.grad_array()(0, 0) == 0.f);  // p = 0 there
    CHECK(std::isfinite(logits.grad_array()(0, 2)));
    // with smoothing the mean over classes includes -log p = +inf: the loss is +inf, as torch's
    CHECK(std::isinf(cross_entropy(logits, Ids{2}, -100, 0.1f).item()));
    // the target's own logit at -inf: +inf, never NaN
    CHECK(std::isinf(cross_entropy(logits, Ids{0}).item()));
}
