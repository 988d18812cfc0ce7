// Forward mode's API (autograd/forward_ad.hpp): dual levels, make_dual, unpack_dual, what a
// tangent reaches (modules, a jvp's own gradient) and every misuse tried: each a clear Error or a
// defined behaviour, and a refused call changes nothing.
#include <xtgrad/autograd/forward_ad.hpp>
#include <xtgrad/autograd/func.hpp>
#include <xtgrad/autograd/grad.hpp>
#include <xtgrad/nn/layers.hpp>
#include <xtgrad/nn/tutorial_d/multihead_attention.hpp>
#include "tests/test_util.hpp"
#include "tests/under_asan.hpp"

#include <sys/resource.h>

#include <cmath>
#include <type_traits>
#include <vector>

TEST_SUITE_BEGIN("forward_ad");

using namespace xtgrad;
using test::expect_error;
using test::rnd;
using V = std::vector<Tensor>;
namespace fwd = forward_ad;

TEST_CASE("forward_ad: make_dual, an op, unpack_dual give f(x) and J v; the tangent is never in .grad") {
    const Tensor x = rnd({2, 3}, 1, 1.f), v = rnd({2, 3}, 2);
    fwd::UnpackedDual out;
    {
        fwd::DualLevel level;
        const Tensor d = fwd::make_dual(x, v);
        out = fwd::unpack_dual(exp(d));
        CHECK_FALSE(fwd::unpack_dual(x).tangent.defined());            // make_dual does not touch the primal
        CHECK_FALSE(fwd::unpack_dual(out.primal).tangent.defined());  // unpack's primal carries no tangent
        CHECK(test::max_abs_diff(fwd::unpack_dual(d).tangent.data(), v.data()) == 0.f);
    }
    CHECK(test::max_abs_diff(out.primal.data(), Array(xt::exp(x.data()))) == 0.f);
    CHECK(test::max_abs_diff(out.tangent.data(), Array(xt::exp(x.data()) * v.data())) < 1e-6f);
    CHECK_FALSE(x.has_grad());
    CHECK_FALSE(fwd::dual_level_active());
}

TEST_CASE("forward_ad: tangents end with their level; unpack_dual outside a level gives no tangent, as torch") {
    const Tensor x = rnd({3}, 3);
    Tensor d, y;
    {
        fwd::DualLevel level;
        d = fwd::make_dual(x, rnd({3}, 4));
        y = tanh(d);
        CHECK(fwd::unpack_dual(y).tangent.defined());
    }
    CHECK_FALSE(fwd::unpack_dual(d).tangent.defined());
    CHECK_FALSE(fwd::unpack_dual(y).tangent.defined());
    fwd::DualLevel next;  // a new level does not see the old one's tangents
    CHECK_FALSE(fwd::unpack_dual(tanh(d)).tangent.defined());
}

TEST_CASE("forward_ad: a nested level is refused and the active one goes on unchanged") {
    fwd::DualLevel level;
    const Tensor v = rnd({2}, 6);
    const Tensor d = fwd::make_dual(rnd({2}, 5), v);
    expect_error([] { fwd::DualLevel inner; }, {"DualLevel", "nested", "still active"});
    CHECK(fwd::dual_level_active());
    CHECK(test::max_abs_diff(fwd::unpack_dual(mul(d, 2.f)).tangent.data(), Array(v.data() * 2.f)) == 0.f);
    // func::jvp opens a level of its own: inside one it is refused too, naming the way out
    expect_error([] { func::jvp([](const V& x) { return x[0]; }, {rnd({2}, 7)}, {rnd({2}, 8)}); },
                 {"func::jvp", "inside a dual level", "jvp_by_double_backward"});
    CHECK(fwd::unpack_dual(d).tangent.defined());
}

TEST_CASE("forward_ad: make_dual refuses a missing level, undefined tensors, mismatched shapes and a second tangent") {
    const Tensor x = rnd({2, 3}, 9);
    expect_error([&] { fwd::make_dual(x, rnd({2, 3}, 10)); }, {"make_dual", "no dual level"});
    fwd::DualLevel level;
    expect_error([&] { fwd::make_dual(x, rnd({3, 2}, 11)); }, {"make_dual", "(3,2)", "(2,3)"});
    expect_error([&] { fwd::make_dual(Tensor(), x); }, {"make_dual", "primal", "undefined"});
    expect_error([&] { fwd::make_dual(x, Tensor()); }, {"make_dual", "tangent", "undefined"});
    CHECK_FALSE(fwd::unpack_dual(x).tangent.defined());  // the refused calls left x as it was
    const Tensor d = fwd::make_dual(x, rnd({2, 3}, 12));
    expect_error([&] { fwd::make_dual(d, rnd({2, 3}, 13)); }, {"make_dual", "already carries a tangent"});
    expect_error([] { fwd::unpack_dual(Tensor()); }, {"unpack_dual", "undefined"});
}

TEST_CASE("forward_ad: func::jvp refuses no inputs and an undefined input, naming them, before it calls f") {
    bool called = false;
    const auto f = [&](const V& x) {
        called = true;
        return exp(x.at(0));
    };
    expect_error([&] { func::jvp(f, {}, {}); }, {"func::jvp", "no inputs given"});
    expect_error([&] { func::jvp(f, {Tensor()}, {rnd({3}, 1)}); }, {"func::jvp", "input 0 is undefined"});
    expect_error([&] { func::jvp_by_double_backward(f, {Tensor()}, {rnd({3}, 1)}); }, {"func::jvp", "input 0 is undefined"});
    CHECK_FALSE(called);
    CHECK_FALSE(fwd::dual_level_active());
}

#if !XTGRAD_UNDER_ASAN  // ASan's quarantine keeps freed memory: RSS measures nothing there
TEST_CASE("forward_ad: a long loop of ops inside one level keeps its memory bounded") {
    // each op's output used to stay on the level's list until the level ended (~640 B per op)
    const auto rss_mib = [] {
        rusage u{};
        getrusage(RUSAGE_SELF, &u);
        return static_cast<double>(u.ru_maxrss) / 1024;
    };
    fwd::DualLevel level;
    const Tensor d = fwd::make_dual(Tensor::ones({4}), Tensor::ones({4}));
    for (int i = 0; i < 5000; ++i) { const Tensor y = exp(d) * 2.f; }
    const double before = rss_mib();
    for (int i = 0; i < 300000; ++i) { const Tensor y = exp(d) * 2.f; }
    CHECK(rss_mib() - before < 48.0);  // 300 000 iterations kept ~370 MiB before
}
#endif

TEST_CASE("forward_ad: ids and masks cannot carry a tangent; a dual table through embedding and index_select") {
    // Ids (int64) and Mask (bool) are not tensors: a tangent on one does not compile
    static_assert(!std::is_invocable_v<decltype(&fwd::make_dual), Ids, Tensor>);
    static_assert(!std::is_invocable_v<decltype(&fwd::make_dual), Tensor, Mask>);
    fwd::DualLevel level;
    const Tensor table = rnd({4, 2}, 14), v = rnd({4, 2}, 15);
    const Tensor d = fwd::make_dual(table, v);
    const Ids ids({3, 0, 3});
    const Tensor t = fwd::unpack_dual(embedding(d, ids)).tangent;
    CHECK(t.shape() == Shape{3, 2});
    CHECK(t.data()(0, 1) == v.data()(3, 1));
    CHECK(t.data()(1, 0) == v.data()(0, 0));
    CHECK(test::max_abs_diff(fwd::unpack_dual(index_select(d, 0, ids)).tangent.data(), t.data()) == 0.f);
    // padding_idx only keeps the padding row out of backward: the forward looks it up, so its
    // tangent is the table tangent's row, as torch's forward_ad (and finite differences) give
    const Tensor padded = fwd::unpack_dual(embedding(d, ids, 3)).tangent;
    CHECK(test::max_abs_diff(padded.data(), t.data()) == 0.f);
}

TEST_CASE("forward_ad: NaN and infinite tangents propagate as values, with no error") {
    fwd::DualLevel level;
    Tensor v = Tensor::from_vector({NAN, 1.f, INFINITY}, {3});
    const Tensor d = fwd::make_dual(Tensor::from_vector({0.f, 1.f, 2.f}, {3}), v);
    const Tensor t = fwd::unpack_dual(sum(mul(exp(d), 2.f))).tangent;
    CHECK(std::isnan(t.item()));
    const Tensor s = fwd::unpack_dual(softmax(d, 0)).tangent;
    CHECK(s.numel() == 3);
    for (float e : s.data()) CHECK(std::isnan(e));  // softmax mixes the row: NaN everywhere, as torch
}

TEST_CASE("forward_ad: an op with no jvp rule is an Error naming it when a tangent reaches it, never a zero") {
    // an op of the caller's, made with make_result but given no jvp rule
    const auto no_rule = [](const Tensor& a) {
        return make_result(Array(a.data() * 2.f), "NoJvpRuleBackward", {a}, {},
                           [](Node& self, const Array& g) { self.accumulate(0, Array(g * 2.f)); });
    };
    const Tensor x = rnd({3}, 16);
    CHECK(test::max_abs_diff(no_rule(x).data(), Array(x.data() * 2.f)) == 0.f);  // fine without a level
    fwd::DualLevel level;
    CHECK_FALSE(fwd::unpack_dual(no_rule(x)).tangent.defined());  // no tangent reached it: fine
    const Tensor d = fwd::make_dual(x, rnd({3}, 17));
    const Tensor y = no_rule(d);
    expect_error([&] { fwd::unpack_dual(y); }, {"NoJvpRuleBackward", "no jvp rule"});
    expect_error([&] { exp(y); }, {"NoJvpRuleBackward", "no jvp rule"});  // nor can a later op read it
    CHECK(test::max_abs_diff(y.data(), Array(x.data() * 2.f)) == 0.f);  // the value itself is right
}

TEST_CASE("forward_ad: a jvp is differentiable: its gradient in the primal is the HVP") {
    // f(x) = sum(x³): J v = Σ 3x² v, and d/dx (J v) = 6 x v = H v
    const Tensor x = rnd({4}, 18).requires_grad_(true), v = rnd({4}, 19);
    Tensor jv;
    {
        fwd::DualLevel level;
        jv = fwd::unpack_dual(sum(pow(fwd::make_dual(x, v), 3.f))).tangent;
    }
    const V g = grad({jv}, {x});
    CHECK(test::max_abs_diff(g[0].data(), Array(6.f * x.data() * v.data())) < 1e-5f);
    const auto [hv_value, hv] = func::hvp([](const V& p) { return sum(pow(p[0], 3.f)); }, {x}, {v});
    CHECK(test::max_abs_diff(g[0].data(), hv[0].data()) < 1e-5f);
}

TEST_CASE("forward_ad: forward-over-reverse: func::jvp of func::grad is the HVP, through fused ops and a loss") {
    const Tensor w = rnd({5, 4}, 30), b = rnd({5}, 31), gamma = rnd({5}, 32);
    const Ids target({1, 4, 0});
    const func::Fn loss = [&](const V& p) {
        const Tensor h = layer_norm(tanh(linear(p[0], w, b)), gamma, Tensor());
        return add(cross_entropy(h, target), sum(mul(softmax(h, -1), h)));
    };
    const Tensor x = rnd({3, 4}, 33), v = rnd({3, 4}, 34);
    const func::Fn gradient = [&](const V& p) { return func::grad(loss)(p)[0]; };
    const auto [g, hv_forward] = func::jvp(gradient, {x}, {v});
    const auto [value, hv] = func::hvp(loss, {x}, {v});
    CHECK(test::max_abs_diff(g.data(), func::grad(loss)({x})[0].data()) < 1e-6f);
    CHECK(test::max_abs_diff(hv_forward.data(), hv[0].data()) < 1e-4f);
    CHECK(xt::amax(xt::abs(hv[0].data()))() > 1e-2f);  // not a vacuous zero
}

TEST_CASE("forward_ad: forward-over-reverse of plain inputs gives constants; through a captured weight, recorded") {
    // func::jvp / jacfwd of func::grad returned tensors that required grad through the inner
    // transform's own leaves, which no caller holds
    const Tensor w = rnd({4, 3}, 40).detach(), x = rnd({2, 3}, 41).detach(), v = rnd({2, 3}, 42).detach();
    const func::Fn loss = [&](const V& p) { return sum(pow(tanh(matmul(p[0], transpose(w, 0, 1))), 3.f)); };
    const func::Fn gradient = [&](const V& p) { return func::grad(loss)(p)[0]; };
    const auto [g, hv] = func::jvp(gradient, {x}, {v});
    CHECK_FALSE(g.requires_grad());
    CHECK_FALSE(hv.requires_grad());
    const Tensor h = func::jacfwd(gradient)({x})[0];
    CHECK_FALSE(h.requires_grad());
    CHECK(test::max_abs_diff(h.data(), func::hessian(loss)({x})[0][0].data()) < 1e-4f);
    // a weight that requires grad: the HVP stays differentiable in it, as func::hvp's
    const Tensor wg = w.detach().requires_grad_(true);
    const func::Fn loss_w = [&](const V& p) { return sum(pow(tanh(matmul(p[0], transpose(wg, 0, 1))), 3.f)); };
    const auto [g_w, hv_w] = func::jvp([&](const V& p) { return func::grad(loss_w)(p)[0]; }, {x}, {v});
    REQUIRE(hv_w.requires_grad());
    const auto [value, hv_rev] = func::hvp(loss_w, {x}, {v});
    REQUIRE(hv_rev[0].requires_grad());
    const Tensor d_forward = grad({sum(hv_w)}, {wg})[0], d_reverse = grad({sum(hv_rev[0])}, {wg})[0];
    CHECK(test::max_abs_diff(d_forward.data(), d_reverse.data()) < 1e-4f);
    CHECK(xt::amax(xt::abs(d_reverse.data()))() > 1e-3f);
}

TEST_CASE("forward_ad: grad of a dual output drops no tangent: create_graph carries it, without it an Error") {
    const Tensor x = rnd({3}, 35).requires_grad_(true), v = rnd({3}, 36);
    fwd::DualLevel level;
    const Tensor d = fwd::make_dual(x, v);
    const Tensor y = sum(pow(d, 3.f));
    // the kernels would return 3x² with no tangent: refused, naming the two ways out
    expect_error([&] { grad({y}, {x}); }, {"grad", "forward-mode tangent", "create_graph", "unpack_dual"});
    // in ops, the gradient 3x² carries its tangent 6 x v
    const Tensor g = grad({y}, {x}, {}, GradOptions().create_graph(true))[0];
    CHECK(test::max_abs_diff(fwd::unpack_dual(g).tangent.data(), Array(6.f * x.data() * v.data())) < 1e-5f);
    // the primal's gradient is plain
    CHECK(test::max_abs_diff(grad({sum(pow(fwd::unpack_dual(d).primal, 3.f))}, {x})[0].data(), g.data()) < 1e-6f);
}

TEST_CASE("forward_ad: dual tensors through nn::LayerNorm and nn::MultiheadAttention equal the double-backward jvp") {
    nn::LayerNorm ln(4);
    ln.weight = rnd({4}, 20);
    ln.bias = rnd({4}, 21);
    nn::tutorial_d::MultiheadAttention mha(4, 2);
    const Tensor x = rnd({3, 2, 4}, 22), v = rnd({3, 2, 4}, 23), vw = rnd({4}, 24);
    // the input dual; LayerNorm's weight dual too (a module computes with the tensors it holds)
    const func::Fn block = [&](const V& p) {
        ln.weight = p[1];  // the module computes with the tensor it is handed (functional_call's idea)
        const Tensor h = ln.forward(p[0]);
        return mha.forward(h, h, h, {}, false).attn_output;
    };
    const Tensor w = ln.weight;
    const auto [y, forward] = func::jvp(block, {x, w}, {v, vw});
    const auto [y2, reference] = func::jvp_by_double_backward(block, {x, w}, {v, vw});
    ln.weight = w;
    CHECK(forward.shape() == Shape{3, 2, 4});
    CHECK(test::max_abs_diff(y.data(), y2.data()) == 0.f);
    CHECK(test::max_abs_diff(forward.data(), reference.data()) < 1e-5f);
    // and jacfwd (forward mode, a column per input element) = jacrev
    const func::Fn norm_only = [&](const V& p) { return ln.forward(p[0]); };
    const V jf = func::jacfwd(norm_only)({rnd({2, 4}, 25)}), jr = func::jacrev(norm_only)({rnd({2, 4}, 25)});
    CHECK(test::max_abs_diff(jf[0].data(), jr[0].data()) < 1e-5f);
}

TEST_CASE("forward_ad: without a level, ops record no tangent (the first-order path is untouched)") {
    const Tensor x = rnd({3}, 26);
    const Tensor y = exp(x);
    CHECK(y.impl()->tangent == nullptr);
    CHECK(y.impl()->tangent_level == 0);
    CHECK_FALSE(fwd::dual_level_active());
}

TEST_SUITE_END();
