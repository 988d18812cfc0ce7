// xtgrad::grad and backward(create_graph): gradients as tensors, gradients of gradients.
#include <xtgrad/autograd/func.hpp>
#include <xtgrad/autograd/grad.hpp>
#include <xtgrad/autograd/gradcheck.hpp>
#include <xtgrad/nn/layers.hpp>
#include "tests/test_util.hpp"

#include <atomic>
#include <cmath>
#include <thread>

TEST_SUITE_BEGIN("higher_order");

using namespace xtgrad;
using test::expect_error;
using test::rnd;

namespace {
GradOptions recorded() { return GradOptions().create_graph(true); }

// y = x³ elementwise, summed: dy/dx = 3x², d²y/dx² = 6x, d³y/dx³ = 6
Tensor cube_sum(const Tensor& x) { return sum(mul(mul(x, x), x)); }
}  // namespace

TEST_CASE("grad: equals backward() and leaves every .grad as it was") {
    Tensor x = rnd({4, 3}, 1), w = rnd({5, 3}, 2), b = rnd({5}, 3);
    const auto loss = [&] { return sum(tanh(linear(x, w, b))); };
    loss().backward();
    const Array gx = x.grad_array(), gw = w.grad_array();
    x.zero_grad();
    w.zero_grad();
    b.zero_grad();
    const std::vector<Tensor> g = grad({loss()}, {x, w});
    CHECK(test::max_abs_diff(g[0].data(), gx) == 0.f);
    CHECK(test::max_abs_diff(g[1].data(), gw) == 0.f);
    CHECK_FALSE(x.has_grad());
    CHECK_FALSE(w.has_grad());
    CHECK_FALSE(b.has_grad());
    CHECK_FALSE(g[0].requires_grad());  // without create_graph: constants
}

TEST_CASE("grad: docs/higher_order.md's first example, line for line: 6x, and a gradient penalty's weight gradients") {
    Tensor x = Tensor::from_vector({0.5f, -1.f}, {2}, /*requires_grad=*/true);
    Tensor y = sum(mul(mul(x, x), x));                                     // Σ x³
    Tensor dx = grad({y}, {x}, {}, GradOptions().create_graph(true))[0];   // 3x², with a graph
    Tensor d2 = grad({sum(dx)}, {x})[0];                                   // 6x: (3, -6)
    // a gradient penalty on a critic D(v) = Σ tanh(v Wᵀ + b): |∂D/∂x|², and its gradient in W and b
    nn::Linear critic(2, 1);
    Tensor gx = grad({sum(tanh(critic.forward(x)))}, {x}, {}, GradOptions().create_graph(true))[0];
    Tensor penalty = sum(mul(gx, gx));
    penalty.backward();                                                    // into critic.weight's and critic.bias's .grad

    CHECK(dx.grad_fn() != nullptr);
    CHECK(d2.ptr()[0] == doctest::Approx(3.f));
    CHECK(d2.ptr()[1] == doctest::Approx(-6.f));
    // gx = s w with s = 1 - tanh²(u), u = w·x + b: penalty = s² |w|², so
    // d/db = 2 s s' |w|² and d/dw_i = 2 s² w_i + 2 s s' x_i |w|², s' = -2 tanh(u) s
    const float w0 = critic.weight.ptr()[0], w1 = critic.weight.ptr()[1], b = critic.bias.ptr()[0];
    const float u = w0 * 0.5f - w1 + b, t = std::tanh(u), sech2 = 1 - t * t, ds = -2 * t * sech2;
    const float norm2 = w0 * w0 + w1 * w1;
    CHECK(critic.bias.grad_array()(0) == doctest::Approx(2 * sech2 * ds * norm2).epsilon(1e-4));
    CHECK(critic.weight.grad_array()(0, 0) == doctest::Approx(2 * sech2 * sech2 * w0 + 2 * sech2 * ds * 0.5f * norm2).epsilon(1e-4));
    CHECK(critic.weight.grad_array()(0, 1) == doctest::Approx(2 * sech2 * sech2 * w1 - 2 * sech2 * ds * norm2).epsilon(1e-4));
}

TEST_CASE("grad: the derivatives of x^3 to the third order, each a tensor of a graph") {
    Tensor x = Tensor::from_vector({-1.5f, 0.5f, 2.f}, {3}, true);
    const std::vector<Tensor> d1 = grad({cube_sum(x)}, {x}, {}, recorded());
    REQUIRE(d1[0].requires_grad());
    CHECK(d1[0].grad_fn()->backward_depth() == 1);  // recorded by the backward pass
    const std::vector<Tensor> d2 = grad({sum(d1[0])}, {x}, {}, recorded());
    const std::vector<Tensor> d3 = grad({sum(d2[0])}, {x});
    for (std::size_t i = 0; i < 3; ++i) {
        const float v = x.ptr()[i];
        CHECK(d1[0].ptr()[i] == doctest::Approx(3 * v * v));
        CHECK(d2[0].ptr()[i] == doctest::Approx(6 * v));
        CHECK(d3[0].ptr()[i] == doctest::Approx(6.f));
    }
}

TEST_CASE("grad: third derivatives of tanh, exp and pow against their formulas") {
    Tensor x = Tensor::from_vector({-0.8f, 0.1f, 0.9f}, {3}, true);
    const auto third = [&](const std::function<Tensor(const Tensor&)>& f) {
        const Tensor d1 = grad({sum(f(x))}, {x}, {}, recorded())[0];
        const Tensor d2 = grad({sum(d1)}, {x}, {}, recorded())[0];
        return grad({sum(d2)}, {x})[0];
    };
    const Tensor t3 = third([](const Tensor& v) { return tanh(v); });
    const Tensor e3 = third([](const Tensor& v) { return exp(v); });
    const Tensor p3 = third([](const Tensor& v) { return pow(add(v, 2.f), 3.5f); });
    for (std::size_t i = 0; i < 3; ++i) {
        const double v = x.ptr()[i], t = std::tanh(v);
        // tanh''' = -2 (1 - t²)(1 - 3t²)
        CHECK(t3.ptr()[i] == doctest::Approx(-2 * (1 - t * t) * (1 - 3 * t * t)).epsilon(1e-4));
        CHECK(e3.ptr()[i] == doctest::Approx(std::exp(v)).epsilon(1e-5));
        // (v + 2)^3.5 -> 3.5 · 2.5 · 1.5 (v + 2)^0.5
        CHECK(p3.ptr()[i] == doctest::Approx(3.5 * 2.5 * 1.5 * std::pow(v + 2, 0.5)).epsilon(1e-4));
    }
}

TEST_CASE("grad: third order by finite differences of the second (gradgradcheck of the first-order gradients)") {
    Tensor x = rnd({5}, 4, 0.7f);
    for (const GradcheckFn& f : std::vector<GradcheckFn>{
             [](const std::vector<Tensor>& v) { return tanh(v[0]); },
             [](const std::vector<Tensor>& v) { return exp(v[0]); },
             [](const std::vector<Tensor>& v) { return pow(add(v[0], 3.f), 2.5f); }}) {
        const GradcheckResult r = gradgradcheck(first_order_gradients(f), {x});
        CHECK_MESSAGE(r.passed, r.message());
    }
}

TEST_CASE("gradgradcheck: its result and refusals name gradgradcheck and the op whose second derivative it checks") {
    const GradcheckFn f = [](const std::vector<Tensor>& v) { return tanh(v[0]); };
    const GradcheckResult r = gradgradcheck(f, {rnd({3}, 36)});
    CHECK(r.passed);
    CHECK(r.message().rfind("gradgradcheck passed for TanhBackward: ", 0) == 0);
    Tensor nan_input = Tensor::from_vector({0.f, std::nanf("")}, {2}, true);
    expect_error([&] { gradgradcheck(f, {nan_input}); }, {"gradgradcheck: input 0 is nan at (1)"});
    // a function that returns nothing: named by the check or transform that called it
    const GradcheckFn undefined = [](const std::vector<Tensor>&) { return Tensor(); };
    expect_error([&] { jvpcheck(undefined, {rnd({2}, 37)}); }, {"jvpcheck: the function returned an undefined tensor"});
    expect_error([&] { func::jacfwd(undefined)({Tensor::zeros({0})}); }, {"func::jacfwd: the function returned an undefined tensor"});
}

TEST_CASE("grad: grad_outputs weight the outputs, and may be tensors of a graph themselves") {
    Tensor x = rnd({3}, 5), v = rnd({3}, 6);
    const Tensor y = mul(x, x);
    const Tensor g = grad({y}, {x}, {v}, recorded())[0];  // 2 x v
    for (std::size_t i = 0; i < 3; ++i) CHECK(g.ptr()[i] == doctest::Approx(2 * x.ptr()[i] * v.ptr()[i]));
    const Tensor dv = grad({sum(g)}, {v})[0];  // d/dv Σ 2 x v = 2 x
    for (std::size_t i = 0; i < 3; ++i) CHECK(dv.ptr()[i] == doctest::Approx(2 * x.ptr()[i]));
}

TEST_CASE("grad: a broadcast input's gradient is summed back, in ops too") {
    Tensor a = rnd({2, 3}, 7), b = rnd({3}, 8);
    const Tensor g = grad({sum(mul(mul(a, b), b))}, {b}, {}, recorded())[0];  // Σ_rows 2 a b
    REQUIRE(g.shape() == Shape{3});
    const Tensor h = grad({sum(g)}, {b})[0];  // Σ_rows 2 a
    for (std::size_t j = 0; j < 3; ++j)
        CHECK(h.ptr()[j] == doctest::Approx(2 * (a.data()(0, j) + a.data()(1, j))).epsilon(1e-5));
}

TEST_CASE("grad: unused inputs, bad arguments and uncomputable nodes are Errors naming them") {
    Tensor x = rnd({2}, 9), unused = rnd({2}, 10).set_name("unused");
    expect_error([&] { grad({sum(x)}, {unused}); }, {"input 0", "'unused'", "not reachable", "allow_unused"});
    CHECK_FALSE(grad({sum(x)}, {unused}, {}, GradOptions().allow_unused(true))[0].defined());
    expect_error([&] { grad({x}, {x}); }, {"grad: called without a gradient on a tensor (2)", "grad() needs a one-element",
                                           "pass grad_outputs"});
    expect_error([&] { grad({mul(x, 2.f)}, {x}, {Tensor::ones({3})}); }, {"grad_outputs[0]", "(3)", "(2)"});
    expect_error([&] { grad({sum(x)}, {x}, {Tensor(), Tensor()}); }, {"2 grad_outputs for 1 outputs"});
    expect_error([&] { grad({Tensor::ones({1})}, {x}); }, {"output 0", "does not require grad"});
    expect_error([&] { grad({sum(x)}, {Tensor::ones({2})}); }, {"input 0", "does not require grad"});
    // an op whose backward is a kernel only: create_graph stops at it, naming it
    const Tensor y = make_result(Array(x.data() * 2.f), "KernelOnlyBackward", {x}, {},
                                 [](Node& self, const Array& g) { self.accumulate(0, Array(g * 2.f)); });
    expect_error([&] { grad({sum(y)}, {x}, {}, recorded()); },
                 {"KernelOnlyBackward", "cannot be differentiated", "through differentiable()"});
    // a hook on an unnamed tensor: the Error says what the tensor is
    Tensor hooked = mul(x, x);
    hooked.register_hook([](const Array& a) { return a; });
    expect_error([&] { grad({sum(hooked)}, {x}, {}, recorded()); },
                 {"a tensor (2) (the output of MulBackward) has a register_hook hook"});
    // ... but first order still runs its kernel
    const Tensor y2 = make_result(Array(x.data() * 2.f), "KernelOnlyBackward", {x}, {},
                                  [](Node& self, const Array& g) { self.accumulate(0, Array(g * 2.f)); });
    CHECK(grad({sum(y2)}, {x})[0].ptr()[1] == doctest::Approx(2.f));
}

TEST_CASE("grad: the graph is freed unless retained, as backward()") {
    Tensor x = rnd({3}, 11);
    const Tensor y = sum(exp(x));
    grad({y}, {x});
    expect_error([&] { grad({y}, {x}); }, {"freed", "retain_graph"});
    const Tensor z = sum(exp(x));
    grad({z}, {x}, {}, GradOptions().retain_graph(true));
    CHECK(grad({z}, {x})[0].ptr()[0] == doctest::Approx(std::exp(x.ptr()[0])));
}

TEST_CASE("backward(create_graph): .grad is a tensor of a graph, and differentiating it again works") {
    Tensor x = Tensor::from_vector({0.5f, -1.f}, {2}, true);
    cube_sum(x).backward(true, true);
    const Tensor gx = x.grad();
    REQUIRE(gx.requires_grad());
    CHECK(gx.ptr()[0] == doctest::Approx(0.75f));
    const Tensor h = grad({sum(gx)}, {x})[0];
    CHECK(h.ptr()[0] == doctest::Approx(3.f));
    CHECK(h.ptr()[1] == doctest::Approx(-6.f));
    // a later plain backward adds into a copy: the recorded gradient's values stay as they were
    cube_sum(x).backward();
    CHECK(gx.ptr()[0] == doctest::Approx(0.75f));
    CHECK(x.grad_array()(0) == doctest::Approx(1.5f));
    x.zero_grad();
    CHECK_FALSE(x.has_grad());
}

TEST_CASE("grad: a hook's array cannot join a create_graph backward; without it, hooks apply") {
    Tensor x = rnd({2}, 12);
    Tensor h = mul(x, 3.f);
    h.register_hook([](const Array& g) { return Array(g * 10.f); });
    CHECK(grad({sum(h)}, {x}, {}, GradOptions().retain_graph(true))[0].ptr()[0] == doctest::Approx(30.f));
    expect_error([&] { grad({sum(h)}, {x}, {}, recorded()); }, {"register_hook", "create_graph"});
}

TEST_CASE("grad: an input named twice, an output that is an input, grad mode off, a throwing function") {
    Tensor x = rnd({3}, 13);
    const std::vector<Tensor> twice = grad({sum(mul(x, x))}, {x, x});
    CHECK(test::max_abs_diff(twice[0].data(), twice[1].data()) == 0.f);
    CHECK(twice[0].ptr()[2] == doctest::Approx(2 * x.ptr()[2]));
    Tensor s = Tensor::scalar(2.f, true);
    CHECK(grad({s}, {s})[0].item() == 1.f);  // d s / d s
    Tensor g;
    {
        // a graph recorded before NoGradGuard: create_graph records its backward inside it too
        const Tensor y = sum(exp(x));
        NoGradGuard off;
        g = grad({y}, {x}, {}, recorded())[0];
        CHECK(g.requires_grad());
        CHECK_FALSE(is_grad_enabled());
    }
    CHECK(grad({sum(g)}, {x})[0].ptr()[0] == doctest::Approx(std::exp(x.ptr()[0])));
    // a function that throws inside a transform leaves grad mode as it was
    CHECK_THROWS_AS(func::grad([](const std::vector<Tensor>& v) -> Tensor { return sum(v[0]) + Tensor::ones({2}); })({x}),
                    Error);
    CHECK(is_grad_enabled());
}

TEST_CASE("grad: one tensor in several slots of a fused op (self-attention's q = k = v): counted once") {
    Tensor x = rnd({1, 3, 4}, 20), w = rnd({4}, 21, 0.5f), c = rnd({2, 2, 3}, 22);
    const auto check = [](const char* what, const std::function<Tensor()>& f, const Tensor& in) {
        INFO(what);
        const Tensor kernel = grad({f()}, {in})[0];
        const Tensor in_ops = grad({f()}, {in}, {}, recorded())[0];
        CHECK(test::max_abs_diff(kernel.data(), in_ops.data()) < 2e-5f);
    };
    check("attention_context(x, x, x)", [&] {
        Generator g(0);
        const Tensor a = attention_context(x, x, x, 0.7f, nullptr, 0.f, Tensor(), 0.f, false, g);
        return sum(mul(a, a));
    }, x);
    check("attention_context_heads(x, x, x)", [&] {
        Generator g(0);
        const Tensor a = attention_context_heads(x, x, x, 2, 0.7f, nullptr, 0.f, Tensor(), 0.f, false, g);
        return sum(mul(a, a));
    }, x);
    check("layer_norm(w, w, w)", [&] { return sum(mul(layer_norm(w, w, w), w)); }, w);
    check("conv1d(c, c)", [&] { return sum(mul(conv1d(c, c), conv1d(c, c))); }, c);
    const GradcheckResult r = gradgradcheck([](const std::vector<Tensor>& v) {
        Generator g(0);
        return attention_context(v[0], v[0], v[0], 0.7f, nullptr, 0.f, Tensor(), 0.f, false, g);
    }, {rnd({1, 3, 2}, 23)});
    CHECK_MESSAGE(r.passed, r.message());
}

TEST_CASE("grad: create_graph inside a NoGradGuard records the whole backward (sums and broadcasts too)") {
    Tensor x = Tensor::from_vector({0.3f, -0.7f}, {2}, true);
    const auto second = [&](bool guarded) {
        const Tensor h = tanh(x);
        const Tensor y = sum(mul(h, h));  // h used twice: the two gradients are summed in the walk
        Tensor g;
        if (guarded) {
            NoGradGuard off;
            g = grad({y}, {x}, {}, recorded())[0];
        } else {
            g = grad({y}, {x}, {}, recorded())[0];
        }
        return grad({sum(g)}, {x})[0];
    };
    const Tensor plain = second(false), guarded = second(true);
    CHECK(plain.ptr()[0] == doctest::Approx(1.3643).epsilon(1e-3));
    CHECK(test::max_abs_diff(plain.data(), guarded.data()) == 0.f);
}

TEST_CASE("backward(create_graph): each leaf's .grad has values of its own, and a write to one is counted") {
    Tensor x = rnd({2}, 24), w = rnd({2}, 25);
    sum(add(x, w)).backward(true, true);
    REQUIRE(x.grad().values_ptr() != w.grad().values_ptr());
    x.grad_array() *= 10.f;
    CHECK(w.grad_array()(0) == 1.f);
    x.zero_grad();
    w.zero_grad();
    // a recorded gradient that a later node saved, written in place: the version error, not a wrong result
    sum(mul(mul(x, x), x)).backward(true, true);
    const Tensor gx = x.grad();
    const Tensor penalty = sum(mul(gx, gx));
    x.grad_array() *= 0.f;
    expect_error([&] { grad({penalty}, {x}); }, {"MulBackward", "modified by an inplace operation"});
    x.zero_grad();
}

TEST_CASE("grad: a refused pass changes nothing: the graph stays whole, no .grad is written") {
    Tensor x = rnd({3}, 26);
    // refused half-way (a node without a backward in ops) with retain_graph false: nothing freed
    const Tensor k = make_result(Array(x.data() * 2.f), "KernelOnlyBackward", {x}, {},
                                 [](Node& self, const Array& g) { self.accumulate(0, Array(g * 2.f)); });
    const Tensor y = sum(exp(k));
    expect_error([&] { grad({y}, {x}, {}, GradOptions().create_graph(true).retain_graph(false)); }, {"KernelOnlyBackward"});
    CHECK(grad({y}, {x})[0].ptr()[0] == doctest::Approx(2 * std::exp(2 * x.ptr()[0])).epsilon(1e-5));
    // backward(create_graph) refused at one leaf: the others keep their .grad
    Tensor a = rnd({2}, 27), b = rnd({2}, 28);
    sum(mul(a, b)).backward();
    const Array a_before = a.grad_array();
    b.grad_array() = xt::zeros<float>(Shape{3});  // a .grad of the wrong shape
    expect_error([&] { sum(mul(a, b)).backward(true, true); }, {"cannot add a gradient of shape (2)"});
    CHECK(test::max_abs_diff(a.grad_array(), a_before) == 0.f);
    // an input the outputs do not reach is refused before anything runs: the graph is not freed
    Tensor c = rnd({2}, 32), unused = rnd({1}, 33).set_name("unused");
    const Tensor z = sum(mul(c, c));
    expect_error([&] { grad({z}, {c, unused}); }, {"input 1", "'unused'", "not reachable"});
    CHECK(grad({z}, {c})[0].ptr()[1] == doctest::Approx(2 * c.ptr()[1]));
}

TEST_CASE("grad: an input above a part of the graph an earlier pass freed gets its gradient; nothing below runs") {
    Tensor x = rnd({2}, 34);
    const Tensor h = exp(x);
    sum(h).backward();  // frees ExpBackward, below h
    const Tensor y = sum(mul(h, h));
    const Tensor g = grad({y}, {h}, {}, GradOptions().retain_graph(true))[0];
    CHECK(g.ptr()[0] == doctest::Approx(2 * h.ptr()[0]));
    CHECK(g.ptr()[1] == doctest::Approx(2 * h.ptr()[1]));
    CHECK(func::grad([](const std::vector<Tensor>& v) { return sum(mul(v[0], v[0])); })({h})[0].ptr()[0] ==
          doctest::Approx(2 * h.ptr()[0]));
    // an input below the freed node is out of reach: the Error names the freed node
    expect_error([&] { grad({y}, {x}); }, {"ExpBackward", "freed", "retain_graph"});
    expect_error([&] { grad({y}, {h, x}); }, {"ExpBackward", "freed"});
    // the refusals freed nothing
    CHECK(grad({y}, {h})[0].ptr()[0] == doctest::Approx(2 * h.ptr()[0]));
}

TEST_CASE("grad: a hook that calls grad() through its own tensor is an Error, not a stack overflow") {
    Tensor x = rnd({2}, 29);
    Tensor h = mul(x, x);
    h.register_hook([&](const Array& a) {
        grad({sum(h)}, {x}, {}, GradOptions().retain_graph(true));
        return a;
    });
    expect_error([&] { grad({sum(h)}, {x}, {}, GradOptions().retain_graph(true)); }, {"grad", "nested", "hook"});
}

TEST_CASE("grad: passes over one shared graph from two threads, retain_graph on each, all give the right gradients") {
    // first and second order: both walk the forward's TanhBackward and ExpBackward at the same time
    const Tensor x = rnd({64}, 35);
    const Tensor y = sum(mul(exp(x), tanh(x)));
    const auto first = [&](float weight) {
        return grad({mul(y, weight)}, {x}, {}, GradOptions().create_graph(true).retain_graph(true))[0];
    };
    const Array want1 = first(1.f).data(), want2 = grad({sum(first(1.f))}, {x}, {}, GradOptions().retain_graph(true))[0].data();
    std::atomic<int> wrong{0}, errors{0};
    const auto work = [&](float weight) {
        for (int k = 0; k < 150; ++k) {
            try {
                const Tensor g = first(weight);
                const Tensor g2 = grad({sum(g)}, {x}, {}, GradOptions().retain_graph(true))[0];
                if (test::max_abs_diff(g.data(), Array(want1 * weight)) > 1e-5f * weight ||
                    test::max_abs_diff(g2.data(), Array(want2 * weight)) > 1e-4f * weight)
                    ++wrong;
            } catch (const Error&) {
                ++errors;
            }
        }
    };
    std::thread a(work, 1.f), b(work, 2.f);
    a.join();
    b.join();
    CHECK(wrong.load() == 0);
    CHECK(errors.load() == 0);
}

TEST_CASE("Node::run_into and run_library_backward refuse what would be read out of bounds") {
    Tensor a = rnd({4, 3}, 30), b = rnd({3, 5}, 31);
    const Tensor y = matmul(a, b);
    std::vector<std::shared_ptr<Array>> sink;
    expect_error([&] { y.grad_fn()->run_into(Array(xt::ones<float>({1})), sink); },
                 {"MatmulBackward", "run_into", "(1)", "(4,5)"});
    expect_error([&] { run_library_backward(nullptr, Array(xt::ones<float>({1})), false); }, {"backward", "undefined"});
}

TEST_SUITE_END();
