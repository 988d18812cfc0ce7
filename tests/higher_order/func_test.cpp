// xtgrad::func: grad, vjp, jvp, jacrev, jacfwd, hessian, hvp, against closed forms, finite
// differences and each other.
#include <xtgrad/autograd/func.hpp>
#include "tests/test_util.hpp"

#include <cmath>

TEST_SUITE_BEGIN("higher_order");

using namespace xtgrad;
using test::expect_error;
using V = std::vector<Tensor>;

namespace {
Tensor constant(const Shape& s, std::uint64_t seed, float scale = 1.f) {
    Generator g(seed + 300);
    Tensor t = randn(s, g);
    t.mutable_data() *= scale;
    return t;
}

// f(x) = Σ x³ / 3 + Σ x0 x1 over a 3-vector: grad = x² + (x1, x0, 0), H = diag(2x) + [[0,1,0],[1,0,0],[0,0,0]]
Tensor cubic(const V& x) {
    const Tensor cross = sum(mul(narrow(x[0], 0, 0, 1), narrow(x[0], 0, 1, 1)));
    return add(mul(sum(pow(x[0], 3.f)), 1.f / 3.f), cross);
}

// A 2-layer MLP's mean squared error as a function of its parameters.
struct Mlp {
    Tensor x = constant({5, 3}, 1), target = constant({5, 2}, 2);
    Tensor operator()(const V& p) const {
        const Tensor h = tanh(linear(x, p[0], p[1]));
        const Tensor d = sub(linear(h, p[2], p[3]), target);
        return mean(mul(d, d));
    }
    V params() const { return {constant({4, 3}, 3, 0.5f), constant({4}, 4, 0.5f), constant({2, 4}, 5, 0.5f), constant({2}, 6, 0.5f)}; }
};

float max_diff(const Tensor& a, const Tensor& b) { return test::max_abs_diff(a.data(), b.data()); }
}  // namespace

TEST_CASE("func::grad and func::hessian of a cubic against their closed forms") {
    const Tensor x = Tensor::from_vector({0.5f, -1.f, 2.f}, {3});
    const V g = func::grad(cubic)({x});
    CHECK_FALSE(g[0].requires_grad());  // the input did not require grad: constants
    const float expect_g[] = {0.25f - 1.f, 1.f + 0.5f, 4.f};
    for (std::size_t i = 0; i < 3; ++i) CHECK(g[0].ptr()[i] == doctest::Approx(expect_g[i]));
    const auto H = func::hessian(cubic)({x});
    REQUIRE(H[0][0].shape() == Shape{3, 3});
    const float expect_h[3][3] = {{1.f, 1.f, 0.f}, {1.f, -2.f, 0.f}, {0.f, 0.f, 4.f}};
    for (std::size_t i = 0; i < 3; ++i)
        for (std::size_t j = 0; j < 3; ++j) CHECK(H[0][0].data()(i, j) == doctest::Approx(expect_h[i][j]));
    CHECK_FALSE(x.requires_grad());
}

TEST_CASE("func::jacrev equals func::jacfwd, and both equal finite differences, on softmax and layer norm") {
    const Tensor x = constant({2, 4}, 7), w = constant({4}, 8), b = constant({4}, 9);
    for (const func::Fn& f : std::vector<func::Fn>{
             [](const V& v) { return softmax(v[0], -1); },
             [&](const V& v) { return layer_norm(v[0], v[1], b); },
         }) {
        const V in = {x, w};
        const V jr = func::jacrev(f)(in), jf = func::jacfwd(f)(in);
        REQUIRE(jr[0].shape() == Shape{2, 4, 2, 4});
        CHECK(jr[1].shape() == Shape{2, 4, 4});
        CHECK(max_diff(jr[0], jf[0]) < 1e-5f);
        CHECK(max_diff(jr[1], jf[1]) < 1e-5f);
        // column (0, 1) by central differences
        Tensor plus = Tensor(x.data()), minus = Tensor(x.data());
        plus.mutable_data()(0, 1) += 1e-2f;
        minus.mutable_data()(0, 1) -= 1e-2f;
        const Array fd = (f({plus, w}).data() - f({minus, w}).data()) / 2e-2f;
        for (std::size_t i = 0; i < 2; ++i)
            for (std::size_t j = 0; j < 4; ++j)
                CHECK(jr[0].data()(i, j, 0, 1) == doctest::Approx(fd(i, j)).epsilon(2e-2).scale(1e-2));
    }
}

TEST_CASE("func::jvp and func::vjp are each other's transpose: <J v, u> = <v, Jᵀ u>") {
    const Mlp mlp;
    const V p = mlp.params();
    const func::Fn hidden = [&](const V& q) { return tanh(linear(mlp.x, q[0], q[1])); };
    const V tangents = {constant({4, 3}, 10), constant({4}, 11)};
    const auto [y, jv] = func::jvp(hidden, {p[0], p[1]}, tangents);
    const Tensor u = constant(y.shape(), 12);
    const auto [y2, back] = func::vjp(hidden, {p[0], p[1]});
    const V jtu = back(u);
    const double lhs = sum(mul(jv, u)).item();
    const double rhs = sum(mul(tangents[0], jtu[0])).item() + sum(mul(tangents[1], jtu[1])).item();
    CHECK(lhs == doctest::Approx(rhs).epsilon(1e-5));
    CHECK(max_diff(y, y2) == 0.f);
}

TEST_CASE("func::hvp equals the Hessian times the vector, and the difference of gradients") {
    const Mlp mlp;
    const V p = mlp.params();
    const V v = {constant({4, 3}, 13), constant({4}, 14), constant({2, 4}, 15), constant({2}, 16)};
    const auto [loss, hv] = func::hvp(mlp, p, v);
    CHECK(loss.item() == doctest::Approx(mlp(p).item()));
    // (g(p + εv) - g(p - εv)) / 2ε
    const float eps = 1e-2f;
    V plus, minus;
    for (std::size_t i = 0; i < p.size(); ++i) {
        plus.push_back(Tensor(Array(p[i].data() + eps * v[i].data())));
        minus.push_back(Tensor(Array(p[i].data() - eps * v[i].data())));
    }
    const V gp = func::grad(mlp)(plus), gm = func::grad(mlp)(minus);
    for (std::size_t i = 0; i < p.size(); ++i) {
        const Array fd = (gp[i].data() - gm[i].data()) / (2 * eps);
        // float32 differences of gradients: within 2 % of the largest entry
        CHECK(test::max_abs_diff(hv[i].data(), fd) < 2e-2f * xt::amax(xt::abs(fd))() + 1e-4f);
    }
    // and H · v from the full Hessian's blocks
    const auto H = func::hessian(mlp)(p);
    Array hv0 = xt::zeros<float>(Shape{4, 3});
    for (std::size_t j = 0; j < p.size(); ++j) {
        const std::size_t n = p[j].numel();
        const Array block = xt::reshape_view(H[0][j].data(), {std::size_t{12}, n});
        const Array vj = xt::reshape_view(v[j].data(), {n});
        for (std::size_t r = 0; r < 12; ++r)
            for (std::size_t c = 0; c < n; ++c) hv0.data()[r] += block(r, c) * vj(c);
    }
    CHECK(test::max_abs_diff(hv0, hv[0].data()) < 1e-4f);
}

TEST_CASE("func transforms compose: the gradient of a gradient norm (a gradient penalty)") {
    // penalty(x) = |d f / dx|² for f = Σ tanh(W x); its gradient by hand: 2 H g
    const Tensor w = constant({3, 3}, 17), x = constant({3}, 18);
    const func::Fn f = [&](const V& v) { return sum(tanh(matmul(w, v[0]))); };
    const func::Fn penalty = [&](const V& v) {
        const Tensor g = func::grad(f)(v)[0];
        return sum(mul(g, g));
    };
    const Tensor dp = func::grad(penalty)({x})[0];
    const Tensor g = func::grad(f)({x})[0];
    const Tensor two_hg = mul(func::hvp(f, {x}, {g}).second[0], 2.f);
    CHECK(max_diff(dp, two_hg) < 1e-5f);
}

TEST_CASE("func transforms see what the function captures, and a tensor given twice has a derivative per slot") {
    // a gradient penalty over data (no grad) with captured weights: d/dw |d f / dx|²
    Tensor w = Tensor::from_vector({1.f, -1.5f}, {2}, true);
    const Tensor data = Tensor::from_vector({1.f, 2.f}, {2});
    const func::Fn f = [&](const V& v) { return sum(mul(mul(v[0], v[0]), w)); };  // d f / dx = 2 x w
    const Tensor gx = func::grad(f)({data})[0];
    REQUIRE(gx.requires_grad());  // it depends on w
    const Tensor dw = grad({sum(mul(gx, gx))}, {w})[0];  // Σ 8 x² w
    CHECK(dw.ptr()[0] == doctest::Approx(8.f * 1 * 1));
    CHECK(dw.ptr()[1] == doctest::Approx(8.f * 4 * -1.5f));
    // d/dx [x · d/dy (x y)] = d/dx x² = 2x, with y given as data
    const Tensor y = Tensor::scalar(5.f);
    const Tensor outer = func::grad([&](const V& xs) {
        const Tensor inner = func::grad([&](const V& ys) { return mul(xs[0], ys[0]); })({y})[0];
        return mul(xs[0], inner);
    })({Tensor::scalar(3.f)})[0];
    CHECK(outer.item() == doctest::Approx(6.f));
    // x0 · x1 given the same tensor twice: one derivative per slot, whether it requires grad or not
    for (bool needs_grad : {false, true}) {
        Tensor a = Tensor::scalar(3.f, needs_grad);
        const V g = func::grad([](const V& v) { return mul(v[0], v[1]); })({a, a});
        CHECK(g[0].item() == doctest::Approx(3.f));
        CHECK(g[1].item() == doctest::Approx(3.f));
    }
}

TEST_CASE("func: bad arguments are Errors naming the transform") {
    const func::Fn f = [](const V& v) { return mul(v[0], 2.f); };
    const Tensor x = constant({3}, 19);
    expect_error([&] { func::grad(f)({x}); }, {"func::grad", "one element", "(3)"});
    expect_error([&] { func::jvp(f, {x}, {constant({2}, 1)}); }, {"func::jvp", "tangent 0", "(2)", "(3)"});
    expect_error([&] { func::hvp(f, {x}, {}); }, {"func::hvp", "0 tangents for 1 inputs"});
    expect_error([&] { func::grad(f)({}); }, {"func::grad", "no inputs"});
    expect_error([&] { func::vjp(f, {x}).second(constant({4}, 2)); }, {"func::vjp", "cotangent", "(4)", "(3)"});
    // a linear f: its Hessian is zero, not an Error
    const auto H = func::hessian([](const V& v) { return sum(mul(v[0], 3.f)); })({x});
    CHECK(xt::amax(xt::abs(H[0][0].data()))() == 0.f);
}

TEST_CASE("func: a Jacobian or Hessian larger than the machine's memory is refused before its first column") {
    // 2^20 elements: the Hessian (2^40 floats, 8 TB to build) and the Jacobians of an elementwise f
    const Tensor big = Tensor::zeros({1 << 20});
    const auto square = [](const V& v) { return mul(v[0], v[0]); };
    expect_error([&] { func::hessian([&](const V& v) { return sum(square(v)); })({big}); },
                 {"func::hessian", "Hessian", "1048576 output elements by 1048576 input elements", "GB", "func::hvp"});
    expect_error([&] { func::jacrev(square)({big}); }, {"func::jacrev", "Jacobian", "memory"});
    expect_error([&] { func::jacfwd(square)({big}); }, {"func::jacfwd", "Jacobian", "memory"});
    expect_error([&] { func::jacfwd_by_double_backward(square)({big}); }, {"func::jacfwd", "Jacobian", "memory"});
    // a small one is built as before
    CHECK(func::jacrev(square)({constant({3}, 20)})[0].shape() == Shape{3, 3});
}

TEST_SUITE_END();
