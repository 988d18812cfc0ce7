// Tensor hooks and retain_grad (autograd/tensor.hpp), as torch's register_hook / retain_grad.
#include <xtgrad/autograd/post_accumulate_hooks.hpp>
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

TEST_CASE("a hook that throws something else than an Error stops backward with an Error naming the tensor") {
    Tensor x = Tensor::from_vector({1, 2}, {2}, true).set_name("x");
    x.register_hook([](const Array&) -> Array { throw std::runtime_error("pah"); });
    test::expect_error([&] { sum(x).backward(); }, {"register_hook: a hook on 'x' (2) threw: pah"});
    Tensor y = Tensor::from_vector({1, 2}, {2}, true).set_name("y");
    y.register_hook([](const Array&) -> Array { throw 7; });
    test::expect_error([&] { sum(y).backward(); }, {"register_hook: a hook on 'y' (2) threw a non-standard exception"});
    Tensor z = Tensor::from_vector({1, 2}, {2}, true).set_name("z");
    z.register_hook([](const Array&) -> Array { fail("my_check: refused"); });
    test::expect_error([&] { sum(z).backward(); }, {"my_check: refused"});  // an Error passes unchanged
    Tensor w = Tensor::from_vector({1, 2}, {2}, true).set_name("w");
    [[maybe_unused]] const auto handle = register_post_accumulate_grad_hook(w, [](TensorImpl&) { throw std::logic_error("late"); });
    test::expect_error([&] { sum(w).backward(); }, {"register_post_accumulate_grad_hook: a hook on 'w' threw: late"});
}

TEST_CASE("register_hook needs a tensor that requires grad") {
    Tensor c = Tensor::ones({2}).set_name("c");
    test::expect_error([&] { c.register_hook([](const Array& g) { return g; }); }, {"register_hook", "'c'"});
    Tensor x = Tensor::ones({2}, true).set_name("x");
    test::expect_error([&] { x.register_hook(nullptr); }, {"register_hook", "'x'", "empty"});  // failed only in backward
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

// ---- hooks that do what a careless user's would (docs/reliability.md, "Hooks and gradients") ----

TEST_CASE("a hook that calls backward on its own graph is refused; on an unrelated graph it runs") {
    Tensor x = Tensor::from_vector({1, 2}, {2}, true).set_name("x");
    Tensor h = (x * 3.f).set_name("h");
    Tensor loss = sum(h * h);
    h.register_hook([&](const Array& g) {
        loss.backward();  // re-entrant, on the graph being walked
        return g;
    });
    test::expect_error([&] { loss.backward(true); },
                       {"backward: called while another backward pass is running", "re-entrant"});

    // The outer pass was left clean: a second backward without the hook works.
    Tensor y = Tensor::from_vector({1, 2}, {2}, true);
    Tensor z = Tensor::from_vector({5}, {1}, true);
    Tensor hy = y * 2.f;
    hy.register_hook([&](const Array& g) {
        sum(z * z).backward();  // another graph: allowed, as torch allows it
        return g;
    });
    sum(hy).backward();
    CHECK(y.grad_array()(0) == doctest::Approx(2.f));
    CHECK(z.grad_array()(0) == doctest::Approx(10.f));
}

TEST_CASE("a hook that registers hooks while it runs: no use after free, the new one runs next pass") {
    Tensor x = Tensor::from_vector({1, 2}, {2}, true);
    int added_ran = 0;
    int registrations = 0;
    x.register_hook([&](const Array& g) {
        // Enough registrations to reallocate the vector being walked, every pass.
        for (int i = 0; i < 64; ++i, ++registrations)
            x.register_hook([&](const Array& g2) {
                ++added_ran;
                return g2;
            });
        return g;
    });
    sum(x * 2.f).backward();
    CHECK(registrations == 64);
    CHECK(added_ran == 0);  // registered during this pass: from the next one on
    sum(x * 2.f).backward();
    CHECK(added_ran == 64);
    CHECK(x.grad_array()(0) == doctest::Approx(4.f));
}

TEST_CASE("a post-accumulate hook that registers another while it runs is safe") {
    Tensor w = Tensor::from_vector({1, 2, 3}, {3}, true);
    int inner = 0;
    register_post_accumulate_grad_hook(w, [&](TensorImpl&) {
        for (int i = 0; i < 16; ++i) register_post_accumulate_grad_hook(w, [&](TensorImpl&) { ++inner; });
    });
    sum(w * w).backward();
    CHECK(inner == 0);
    w.zero_grad();
    sum(w * w).backward();
    CHECK(inner == 16);
}

TEST_CASE("a .grad replaced with another shape is refused when the next backward adds into it") {
    Tensor w = Tensor::from_vector({1, 2, 3}, {3}, true).set_name("w");
    sum(w * w).backward();
    w.grad_array() = Array{1.f, 2.f};  // a user's mistake: shape (2) for a (3) parameter
    test::expect_error([&] { sum(w * w).backward(); },
                       {"cannot add a gradient of shape (3)", "'w' (3)", "has shape (2)", "grad_array()"});
}
