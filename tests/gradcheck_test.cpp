// gradcheck itself must catch the classic backward bugs at its default float tolerance.
#include <xtgrad/autograd/node.hpp>
#include "tests/test_util.hpp"
#include <cmath>
#include <limits>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;
using test::rnd;
using V = std::vector<Tensor>;

namespace {
// x * x with a planted bug: the backward forgets the factor 2.
Tensor square_missing_two(const Tensor& x) {
    return make_result(Array(x.data() * x.data()), "BuggySquareBackward", {x}, {{"self", x}},
                       [](Node& self, const Array& g) { self.accumulate(0, Array(g * self.saved("self"))); });
}
// a @ b with a planted bug: dA = dC · B instead of dC · Bᵀ (square B so shapes still fit).
Tensor matmul_transposed_grad(const Tensor& a, const Tensor& b) {
    Tensor ref = matmul(a.detach(), b.detach());
    return make_result(ref.data(), "BuggyMatmulBackward", {a, b}, {{"mat2", b}},
                       [](Node& self, const Array& g) {
                           self.accumulate(0, matmul(Tensor(g), Tensor(self.saved("mat2"))).data());
                       });
}
}  // namespace

TEST_CASE("gradcheck catches a missing factor of 2") {
    Tensor x = rnd({3, 4}, 1);
    GradcheckResult r = gradcheck([](const V& v) { return square_missing_two(v[0]); }, {x});
    CHECK_FALSE(r.passed);
    CHECK(r.op == "BuggySquareBackward");
    CHECK(r.numeric == doctest::Approx(2 * r.analytic).epsilon(0.02));
    CHECK(r.message().find("FAILED") != std::string::npos);
    CHECK(gradcheck([](const V& v) { return v[0] * v[0]; }, {x}));
}

TEST_CASE("gradcheck catches a transposed gradient") {
    Tensor a = rnd({3, 3}, 2);
    Tensor b = rnd({3, 3}, 3);
    b.requires_grad_(false);
    GradcheckResult r = gradcheck([b](const V& v) { return matmul_transposed_grad(v[0], b); }, {a});
    CHECK_FALSE(r.passed);
    CHECK(r.ratio > 5);
    CHECK(gradcheck([b](const V& v) { return matmul(v[0], b); }, {a}));
}

TEST_CASE("gradcheck's fast mode: one random direction per input, and the planted bugs still fail") {
    GradcheckOptions fast;
    fast.fast = true;
    Tensor x = rnd({3, 4}, 1), b = rnd({4, 4}, 3);
    x.set_name("x");
    const Array x_before = x.data(), b_before = b.data();
    const GradcheckResult good = gradcheck([](const V& v) { return matmul(v[0] * v[0], v[1]); }, {x, b}, fast);
    CHECK_MESSAGE(good.passed, good.message());
    CHECK(good.checked == 2);  // one direction per input, not 12 + 16 elements
    CHECK(good.fast);
    CHECK(good.index.empty());
    CHECK(good.message().find("2 random directions (fast mode) compared; worst: input ") != std::string::npos);
    CHECK(test::max_abs_diff(x.data(), x_before) == 0.f);  // the inputs are put back exactly
    CHECK(test::max_abs_diff(b.data(), b_before) == 0.f);

    const GradcheckResult missing_two = gradcheck([](const V& v) { return square_missing_two(v[0]); }, {x}, fast);
    CHECK_FALSE(missing_two.passed);
    CHECK(missing_two.numeric == doctest::Approx(2 * missing_two.analytic).epsilon(0.02));
    CHECK(missing_two.message().find("FAILED for BuggySquareBackward: 1 random direction (fast mode) compared; "
                                     "worst: input 0 'x' along its direction") != std::string::npos);
    Tensor a = rnd({3, 3}, 2), m = rnd({3, 3}, 3);
    m.requires_grad_(false);
    CHECK_FALSE(gradcheck([m](const V& v) { return matmul_transposed_grad(v[0], m); }, {a}, fast).passed);
    CHECK(gradcheck([m](const V& v) { return matmul(v[0], m); }, {a}, fast));
}

TEST_CASE("gradcheck, gradgradcheck and jvpcheck refuse a step or tolerance that makes every comparison meaningless") {
    Tensor x = rnd({2, 3}, 6);
    const Array before = x.data();
    int calls = 0;
    const GradcheckFn f = [&calls](const V& v) { ++calls; return v[0] * v[0]; };
    for (const bool fast : {false, true}) {
        for (const double eps : {0.0, -1e-2, std::nan(""), std::numeric_limits<double>::infinity()}) {
            GradcheckOptions o;
            o.eps = eps;
            o.fast = fast;
            test::expect_error([&] { gradcheck(f, {x}, o); }, {"gradcheck: eps must be a finite number above 0, got "});
            test::expect_error([&] { gradgradcheck(f, {x}, o); }, {"gradgradcheck: eps must be a finite number above 0"});
        }
        GradcheckOptions o;
        o.fast = fast;
        o.atol = -1;
        test::expect_error([&] { gradcheck(f, {x}, o); }, {"gradcheck: atol must be a finite number >= 0, got -1"});
        o.atol = 2e-3;
        o.rtol = std::nan("");
        test::expect_error([&] { gradcheck(f, {x}, o); }, {"gradcheck: rtol must be a finite number >= 0, got nan"});
    }
    JvpcheckOptions j;
    j.eps = 0;
    test::expect_error([&] { jvpcheck(f, {x}, j); }, {"jvpcheck: eps must be a finite number above 0, got 0"});
    j.eps = 1e-2;
    j.reference_rtol = -1;
    test::expect_error([&] { jvpcheck(f, {x}, j); }, {"jvpcheck: reference_rtol must be a finite number >= 0, got -1"});
    CHECK(calls == 0);  // refused before f runs
    CHECK(test::max_abs_diff(x.data(), before) == 0.f);
    GradcheckOptions zero_tolerance;  // 0 is allowed: an exact check
    zero_tolerance.atol = zero_tolerance.rtol = 0;
    CHECK_NOTHROW(gradcheck(f, {x}, zero_tolerance));
}

TEST_CASE("gradcheck and jvpcheck that fail on a moved input leave its values as they were, and refuse a shape that moves") {
    for (const bool fast : {false, true}) {
        CAPTURE(fast);
        GradcheckOptions o;
        o.fast = fast;
        Tensor x = rnd({2, 3}, 7);
        const Array before = x.data();
        int calls = 0;
        // f throws on its second call: the input is moved by +eps then
        const GradcheckFn throws_when_moved = [&calls](const V& v) {
            if (++calls == 2) fail("my_function: refused a moved input");
            return v[0] * v[0];
        };
        test::expect_error([&] { gradcheck(throws_when_moved, {x}, o); }, {"my_function: refused a moved input"});
        CHECK(test::max_abs_diff(x.data(), before) == 0.f);
        CHECK_FALSE(x.has_grad());
        // an output whose length follows the values (the first element's sign)
        const GradcheckFn moving_shape = [&before](const V& v) {
            return v[0].data()(0, 0) == before(0, 0) ? v[0] * v[0] : reshape(v[0], {-1}) * 2.f;
        };
        test::expect_error([&] { gradcheck(moving_shape, {x}, o); },
                           {"gradcheck: the function's output has shape (2,3) at the inputs given but (6) with an input moved by eps"});
        CHECK(test::max_abs_diff(x.data(), before) == 0.f);
    }
    Tensor x = rnd({2, 3}, 8);
    const Array before = x.data();
    const GradcheckFn moving_shape = [&before](const V& v) {
        return v[0].data()(0, 0) == before(0, 0) ? v[0] * v[0] : reshape(v[0], {-1}) * 2.f;
    };
    test::expect_error([&] { jvpcheck(moving_shape, {x}); }, {"jvpcheck: the function's output has shape (2,3)"});
    CHECK(test::max_abs_diff(x.data(), before) == 0.f);
}

TEST_CASE("gradcheck and jvpcheck refuse what would make a comparison meaningless, and pass an exact check") {
    const GradcheckFn sq = [](const V& v) { return v[0] * v[0]; };
    for (const bool fast : {false, true}) {
        CAPTURE(fast);
        GradcheckOptions o;
        o.fast = fast;
        // a NaN or an infinity among the inputs
        Tensor x = rnd({2, 3}, 9);
        x.mutable_ptr()[4] = std::nanf("");
        test::expect_error([&] { gradcheck(sq, {x}, o); }, {"gradcheck: input 0 is nan at (1,1)"});
        // a step float32 cannot take: values near 10^6 (spacing 0.06) or an eps of 10^-45
        Tensor big = rnd({2, 3}, 10, 1e6f);
        test::expect_error([&] { gradcheck(sq, {big}, o); }, {fast ? "is lost in float32 rounding" : "does not move input 0's element"});
        GradcheckOptions tiny = o;
        tiny.eps = 1e-45;
        test::expect_error([&] { gradcheck(sq, {rnd({2, 3}, 11)}, tiny); }, {"eps 1e-45"});
        // an eps that overflows the output
        GradcheckOptions huge = o;
        huge.eps = 1e30;
        test::expect_error([&] { gradcheck(sq, {rnd({2, 3}, 12)}, huge); }, {"the function's output is not finite with input 0 moved by eps 1e+30"});
        // an exact check: equal values pass at atol = rtol = 0
        GradcheckOptions exact = o;
        exact.atol = exact.rtol = 0;
        CHECK(gradcheck([](const V& v) { return v[0] * 0.f; }, {rnd({2, 3}, 13)}, exact));
        // an empty input has nothing to compare, in either mode
        const GradcheckResult empty = gradcheck(sq, {rnd({2, 0}, 14)}, o);
        CHECK(empty.checked == 0);
        // a non-leaf input is checked as a leaf of its values (its own .grad was never kept)
        Tensor a = rnd({2, 3}, 15);
        const Tensor non_leaf = a * 2.f;
        const GradcheckResult r = gradcheck(sq, {non_leaf}, o);
        CHECK_MESSAGE(r.passed, r.message());
        CHECK_FALSE(a.has_grad());
        // a function that writes into its input: refused, and the values put back
        Tensor w = rnd({2, 3}, 16);
        const Array before = w.data();
        test::expect_error([&] { gradcheck([](const V& v) { Tensor t = v[0]; t.mutable_data() *= 1.001f; return v[0] * v[0]; }, {w}, o); },
                           {"gradcheck: the function wrote into input 0"});
        CHECK(test::max_abs_diff(w.data(), before) == 0.f);
        // called inside a NoGradGuard, or inside another gradcheck's function: the analytic pass has its graph
        {
            const NoGradGuard off;
            CHECK(gradcheck(sq, {rnd({3}, 17)}, o));
        }
        CHECK(gradcheck([&o](const V& v) {
            CHECK(gradcheck([](const V& u) { return u[0] * u[0]; }, {v[0]}, o));
            return v[0] * v[0];
        }, {rnd({3}, 18)}, o));
    }
    // jvpcheck: the same refusals
    Tensor x = rnd({2, 3}, 19);
    x.mutable_ptr()[0] = std::numeric_limits<float>::infinity();
    test::expect_error([&] { jvpcheck(sq, {x}); }, {"jvpcheck: input 0 is inf at (0,0)"});
    test::expect_error([&] { jvpcheck(sq, {rnd({2, 3}, 20, 1e6f)}); }, {"jvpcheck: eps 0.01 is lost in float32 rounding at input 0"});
    JvpcheckOptions huge;
    huge.eps = 1e30;
    test::expect_error([&] { jvpcheck(sq, {rnd({2, 3}, 21)}, huge); }, {"jvpcheck: the function's output is not finite"});
    Tensor w = rnd({2, 3}, 22);
    const Array before = w.data();
    // jvpcheck hands f copies of an input that requires grad: what f writes stays in them
    const GradcheckFn writes = [](const V& v) { Tensor t = v[0]; t.mutable_data() *= 1.001f; return v[0] * v[0]; };
    (void)jvpcheck(writes, {w});
    CHECK(test::max_abs_diff(w.data(), before) == 0.f);
    // an input without grad reaches f as a handle on its values: the write is refused and put back
    Tensor w_plain = rnd({2, 3}, 25);
    w_plain.requires_grad_(false);
    const Array plain_before = w_plain.data();
    test::expect_error([&] { jvpcheck(writes, {w_plain}); }, {"jvpcheck: the function wrote into input 0"});
    CHECK(test::max_abs_diff(w_plain.data(), plain_before) == 0.f);
    // inputs that do not require grad: the op is still named (forward mode alone records no graph)
    Tensor plain = rnd({2, 3}, 24);
    plain.requires_grad_(false);
    CHECK(jvpcheck(sq, {plain}).message().rfind("jvpcheck passed for MulBackward", 0) == 0);
    JvpcheckOptions exact;
    exact.atol = exact.rtol = exact.reference_atol = exact.reference_rtol = 0;
    CHECK(jvpcheck([](const V& v) { return v[0] * 0.f; }, {rnd({2, 3}, 23)}, exact));
}

TEST_CASE("gradcheck reports the worst element with its index and input name") {
    Tensor x = rnd({2, 2}, 4);
    x.set_name("x");
    GradcheckResult r = gradcheck([](const V& v) { return square_missing_two(v[0]); }, {x});
    CHECK(r.input == 0);
    CHECK(r.input_name == "x");
    CHECK(r.index.size() == 2);
    CHECK(r.checked == 4);
}

TEST_CASE("gradcheck leaves the caller's gradients and requires_grad flags as it found them") {
    // A learner's leaf after their own backward, a parameter the function captures, and an input
    // that does not require grad: torch's gradcheck (autograd.grad) writes none of their .grad.
    Tensor x = rnd({2, 3}, 5);
    Tensor w = rnd({3, 2}, 6);
    sum(matmul(x, w)).backward();
    const Array x_grad = x.grad_array(), w_grad = w.grad_array();
    Tensor c = rnd({2, 3}, 7);
    c.requires_grad_(false);
    CHECK(gradcheck([w](const V& v) { return matmul(v[0] * v[1], w); }, {x, c}));
    REQUIRE(x.has_grad());
    CHECK((x.grad_array() == x_grad));
    REQUIRE(w.has_grad());
    CHECK((w.grad_array() == w_grad));
    CHECK_FALSE(c.has_grad());

    // No input requires grad: all are checked, then switched back off, gradient-free.
    Tensor a = rnd({3}, 8), b = rnd({3}, 9);
    a.requires_grad_(false);
    b.requires_grad_(false);
    GradcheckResult r = gradcheck([](const V& v) { return v[0] * v[1]; }, {a, b});
    CHECK(r.passed);
    CHECK(r.checked == 6);
    CHECK_FALSE(a.requires_grad());
    CHECK_FALSE(b.requires_grad());
    CHECK_FALSE(a.has_grad());
    CHECK_FALSE(b.has_grad());
}

TEST_SUITE_END();
