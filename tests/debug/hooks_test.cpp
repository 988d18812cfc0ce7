// Tensor hooks and retain_grad (autograd/tensor.hpp), as torch's register_hook / retain_grad.
#include "test_util.hpp"

using namespace xtgrad;

TEST_SUITE_BEGIN("debug");

TEST_CASE("register_hook on a non-leaf changes the gradient that flows on") {
    Tensor x = Tensor::from_vector({1, 2, 3}, {3}, true);
    Tensor h = x * 2.f;  // dh/dx = 2
    h.register_hook([](const Array& g) { return Array(g * 10.f); });
    sum(h).backward();
    for (std::size_t i = 0; i < 3; ++i) CHECK(x.grad_array()(i) == doctest::Approx(20.f));
}

TEST_CASE("register_hook on a leaf sees the summed gradient and replaces what is stored") {
    Tensor x = Tensor::from_vector({1, 2}, {2}, true);
    Array seen;
    x.register_hook([&](const Array& g) {
        seen = g;
        return Array(g + 1.f);
    });
    sum(x * x + x).backward();  // dy/dx = 2x + 1, from two consumers
    REQUIRE(seen.size() == 2);
    CHECK(seen(0) == doctest::Approx(3.f));
    CHECK(seen(1) == doctest::Approx(5.f));
    CHECK(x.grad_array()(0) == doctest::Approx(4.f));
    CHECK(x.grad_array()(1) == doctest::Approx(6.f));
}

TEST_CASE("hooks run in registration order, each on the previous result") {
    Tensor x = Tensor::from_vector({1}, {1}, true);
    x.register_hook([](const Array& g) { return Array(g + 1.f); });
    x.register_hook([](const Array& g) { return Array(g * 3.f); });
    sum(x).backward();
    CHECK(x.grad_array()(0) == doctest::Approx(6.f));
}

TEST_CASE("a hook that returns another shape is an error naming the tensor") {
    Tensor x = Tensor::from_vector({1, 2}, {2}, true).set_name("x");
    x.register_hook([](const Array&) { return Array::from_shape({3}); });
    test::expect_error([&] { sum(x).backward(); }, {"register_hook", "'x'", "(3)", "(2)"});
}

TEST_CASE("register_hook needs a tensor that requires grad") {
    Tensor c = Tensor::ones({2}).set_name("c");
    test::expect_error([&] { c.register_hook([](const Array& g) { return g; }); }, {"register_hook", "'c'"});
}

TEST_CASE("retain_grad keeps a non-leaf's gradient; without it the gradient is dropped") {
    Tensor x = Tensor::from_vector({1, 2, 3}, {3}, true);
    Tensor kept = x * 3.f, dropped = x * 3.f;
    kept.retain_grad();
    sum(kept * kept + dropped).backward();
    REQUIRE(kept.has_grad());
    CHECK_FALSE(dropped.has_grad());
    for (std::size_t i = 0; i < 3; ++i) CHECK(kept.grad_array()(i) == doctest::Approx(2.f * 3.f * (i + 1)));
    CHECK(x.grad_array()(1) == doctest::Approx(3.f * 2.f * 6.f + 3.f));
}

TEST_CASE("retain_grad on a tensor that needs no gradient is an error") {
    Tensor c = Tensor::ones({2}).set_name("c");
    test::expect_error([&] { c.retain_grad(); }, {"retain_grad", "'c'"});
}

TEST_CASE("docs/debugging.md's example: a hook and retain_grad on the same tensor") {
    Tensor x = Tensor::from_vector({1, 2}, {2}, true);
    Tensor h = x * 2.f;
    h.register_hook([](const Array& g) { return Array(g * 10.f); });
    h.retain_grad();
    sum(h).backward();
    CHECK(x.grad_array()(0) == doctest::Approx(20.f));
    CHECK(h.grad_array()(1) == doctest::Approx(10.f));
}

TEST_CASE("a leaf's hook sees this backward's gradient, not what an earlier backward left in .grad") {
    Tensor x = Tensor::from_vector({1, 2}, {2}, true);
    sum(x * 2.f).backward();  // .grad = 2
    std::vector<float> seen;
    x.register_hook([&](const Array& g) {
        seen.push_back(g(0));
        return Array(g * 10.f);
    });
    sum(x * 3.f).backward();
    REQUIRE(seen.size() == 1);
    CHECK(seen[0] == doctest::Approx(3.f));                 // the incoming gradient only
    CHECK(x.grad_array()(0) == doctest::Approx(2.f + 30.f));  // the hook's result is added into .grad
}

TEST_CASE("a retained non-leaf's hook sees the incoming gradient, before it is added into .grad") {
    Tensor x = Tensor::from_vector({1, 2}, {2}, true);
    Tensor h = x * 2.f;
    h.retain_grad();
    std::vector<float> seen;
    h.register_hook([&](const Array& g) {
        seen.push_back(g(1));
        return g;
    });
    Tensor l = sum(h * 5.f);
    l.backward(true);
    l.backward();
    REQUIRE(seen.size() == 2);
    CHECK(seen[0] == doctest::Approx(5.f));
    CHECK(seen[1] == doctest::Approx(5.f));
    CHECK(h.grad_array()(1) == doctest::Approx(10.f));  // .grad accumulates both
    CHECK(x.grad_array()(1) == doctest::Approx(20.f));
}

TEST_SUITE_END();
