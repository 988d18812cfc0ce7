// Arithmetic: add, sub, mul, div (broadcasting), neg, scalar forms, pow, exp, log, sqrt.
// Backward of a broadcast binary op returns the gradient in the output's shape; Node::accumulate
// sums it back to each input's shape (the single place where broadcasting is undone).
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/autograd/ops/common.hpp>
#include <xtgrad/autograd/broadcast.hpp>
#include <xtgrad/autograd/forward_ad.hpp>

#include <xtensor/xmath.hpp>

namespace xtgrad {

namespace {

void check_binary(const Tensor& a, const Tensor& b, const char* op) {
    detail::require_defined(a, op, "the first operand");
    detail::require_defined(b, op, "the second operand");
    // throws with both shapes if they don't broadcast, or if the result's size (or, empty, its strides) cannot be
    checked_numel(broadcast_shapes(a.shape(), b.shape(), op), op);
}

// One elementwise op of one tensor: y = f(x), dx = df(g, s), where s is the one value the
// derivative reads, the input x ("self") or the output y ("result"); only that one is saved, so
// the other is freed as soon as nothing else holds it (relu(linear(x)) keeps relu's output,
// not linear's).
// `in_ops` is the same derivative in xtgrad's ops (Node::DifferentiableFn), given g and s as tensors.
enum class Reads { input, output };
template <Reads reads, class Forward, class Backward, class InOps>
Tensor unary(const Tensor& a, const char* op, Forward forward, Backward backward, InOps in_ops) {
    detail::require_defined(a, op, "the input");
    Tensor y(forward(a.data()));
    constexpr const char* name = reads == Reads::input ? "self" : "result";
    Tensor r = differentiable(
        attach_grad_fn(y, op, {a}, {{name, reads == Reads::input ? a : y}},
                       [backward](Node& self, const Array& g) { self.accumulate(0, backward(g, self.saved(name))); }),
        [in_ops](const Node& self, const Tensor& g) -> Grads { return {in_ops(g, self.saved_tensor(name))}; });
    // jvp: the Jacobian is diagonal, so J t is the backward's formula given t for g
    return detail::with_jvp(r, {&a}, [&](const detail::Tangents& t) { return in_ops(t[0], reads == Reads::input ? a : r); });
}

}  // namespace

namespace {
// a + b; operands of one shape (a residual's x + f(x), as big as a layer's output) element
// ranges over the pool, the same sums for any thread count; broadcasts through xtensor
Array sum_of(const Array& a, const Array& b) {
    if (shape_of(a) != shape_of(b)) return Array(a + b);
    Array out = empty_array(shape_of(a));
    const float *x = a.data(), *y = b.data();
    float* z = out.data();
    parallel_rows(out.size(), 1, [&](std::size_t i0, std::size_t i1) {
        const float* __restrict xi = x;
        const float* __restrict yi = y;
        float* __restrict zi = z;
        for (std::size_t i = i0; i < i1; ++i) zi[i] = xi[i] + yi[i];
    });
    return out;
}

// a · b elementwise over the pool (attention's q · scaling on every (T, B·H, hd) query).
Array scaled(const Array& a, float b) {
    Array out = empty_array(shape_of(a));
    const float* x = a.data();
    float* y = out.data();
    parallel_rows(out.size(), 1, [&](std::size_t i0, std::size_t i1) {
        const float* __restrict xi = x;
        float* __restrict yi = y;
        for (std::size_t i = i0; i < i1; ++i) yi[i] = xi[i] * b;
    });
    return out;
}
}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
    check_binary(a, b, "add");
    return detail::with_jvp(differentiable(
        make_result(sum_of(a.data(), b.data()), "AddBackward", {a, b}, {},
                    [](Node& self, const Array& g) {
                        self.accumulate(0, g);
                        self.pass_on(1, g);  // the second input takes the buffer itself (a residual's x + f(x): one copy less)
                    }),
        [](const Node&, const Tensor& g) -> Grads { return {g, g}; }),
        {&a, &b}, [](const detail::Tangents& t) { return detail::add_terms(t[0], t[1]); });
}

Tensor sub(const Tensor& a, const Tensor& b) {
    check_binary(a, b, "sub");
    return detail::with_jvp(differentiable(make_result(Array(a.data() - b.data()), "SubBackward", {a, b}, {},
                                      [](Node& self, const Array& g) {
                                          self.accumulate(0, g);
                                          if (self.needs_grad(1)) self.accumulate(1, Array(-g));
                                      }),
                          [](const Node& self, const Tensor& g) -> Grads {
                              return {g, self.needs_grad(1) ? neg(g) : Tensor()};
                          }),
                          {&a, &b}, [](const detail::Tangents& t) {
                              return detail::add_terms(t[0], t.has(1) ? neg(t[1]) : Tensor());
                          });
}

Tensor mul(const Tensor& a, const Tensor& b) {
    check_binary(a, b, "mul");
    return detail::with_jvp(differentiable(
        make_result(Array(a.data() * b.data()), "MulBackward", {a, b}, {{"self", a}, {"other", b}},
                    [](Node& self, const Array& g) {
                        if (self.needs_grad(0)) self.accumulate(0, Array(g * self.saved("other")));
                        if (self.needs_grad(1)) self.accumulate(1, Array(g * self.saved("self")));
                    }),
        [](const Node& self, const Tensor& g) -> Grads {
            return {self.needs_grad(0) ? mul(g, self.saved_tensor("other")) : Tensor(),
                    self.needs_grad(1) ? mul(g, self.saved_tensor("self")) : Tensor()};
        }),
        {&a, &b}, [&](const detail::Tangents& t) {  // ta b + a tb
            return detail::add_terms(t.has(0) ? mul(t[0], b) : Tensor(), t.has(1) ? mul(a, t[1]) : Tensor());
        });
}

Tensor div(const Tensor& a, const Tensor& b) {
    check_binary(a, b, "div");
    Tensor y = differentiable(
        make_result(Array(a.data() / b.data()), "DivBackward", {a, b}, {{"self", a}, {"other", b}},
                    [](Node& self, const Array& g) {
                        const Array& y = self.saved("other");
                        if (self.needs_grad(0)) self.accumulate(0, Array(g / y));
                        if (self.needs_grad(1)) self.accumulate(1, Array(-g * self.saved("self") / (y * y)));
                    }),
        [](const Node& self, const Tensor& g) -> Grads {
            const Tensor y = self.saved_tensor("other");
            return {self.needs_grad(0) ? div(g, y) : Tensor(),
                    self.needs_grad(1) ? neg(div(mul(g, self.saved_tensor("self")), mul(y, y))) : Tensor()};
        });
    return detail::with_jvp(y, {&a, &b}, [&](const detail::Tangents& t) {  // (ta - y tb) / b
        return div(detail::add_terms(t[0], t.has(1) ? neg(mul(y, t[1])) : Tensor()), b);
    });
}

Tensor add(const Tensor& a, float b) {
    detail::require_defined(a, "add", "the input");
    return detail::with_jvp(differentiable(make_result(Array(a.data() + b), "AddBackward", {a}, {},
                                                       [](Node& self, const Array& g) { self.accumulate(0, g); }),
                                           [](const Node&, const Tensor& g) -> Grads { return {g}; }),
                            {&a}, [](const detail::Tangents& t) { return t[0]; });
}

Tensor mul(const Tensor& a, float b) {
    detail::require_defined(a, "mul", "the input");
    return detail::with_jvp(differentiable(
        make_result(scaled(a.data(), b), "MulBackward", {a}, {},
                    [b](Node& self, const Array& g) {
                        // dx = g · b, written (or added) straight into the input's gradient buffer
                        if (const GradOut dx_out = self.grad_out(0, shape_of(g)))
                            dx_out.write([&](float* dx, auto store) {
                                const float* gi = g.data();
                                parallel_rows(g.size(), 1, [&](std::size_t i0, std::size_t i1) {
                                    for (std::size_t i = i0; i < i1; ++i) store(dx[i], gi[i] * b);
                                });
                            });
                    }),
        [b](const Node&, const Tensor& g) -> Grads { return {mul(g, b)}; }),
        {&a}, [b](const detail::Tangents& t) { return mul(t[0], b); });
}

Tensor neg(const Tensor& a) { return mul(a, -1.f); }

// d x^p / dx = p x^(p-1), and 0 for p = 0 (torch's pow_backward): the formula would give
// 0 · 0^-1 = 0 · ∞ = NaN at x = 0.
Tensor pow(const Tensor& a, float p) {
    return unary<Reads::input>(
        a, "PowBackward", [p](const Array& x) { return Array(xt::pow(x, p)); },
        [p](const Array& g, const Array& x) {
            return p == 0.f ? Array(xt::zeros<float>(g.shape())) : Array(g * p * xt::pow(x, p - 1.f));
        },
        [p](const Tensor& g, const Tensor& x) {
            return p == 0.f ? Tensor::zeros(g.shape()) : mul(mul(g, pow(x, p - 1.f)), p);
        });
}

Tensor exp(const Tensor& a) {
    return unary<Reads::output>(
        a, "ExpBackward", [](const Array& x) { return Array(xt::exp(x)); },
        [](const Array& g, const Array& y) { return Array(g * y); },
        [](const Tensor& g, const Tensor& y) { return mul(g, y); });
}

Tensor log(const Tensor& a) {
    return unary<Reads::input>(
        a, "LogBackward", [](const Array& x) { return Array(xt::log(x)); },
        [](const Array& g, const Array& x) { return Array(g / x); },
        [](const Tensor& g, const Tensor& x) { return div(g, x); });
}

Tensor sqrt(const Tensor& a) {
    return unary<Reads::output>(
        a, "SqrtBackward", [](const Array& x) { return Array(xt::sqrt(x)); },
        [](const Array& g, const Array& y) { return Array(g * 0.5f / y); },
        [](const Tensor& g, const Tensor& y) { return div(mul(g, 0.5f), y); });
}

Tensor tanh(const Tensor& a) {
    return unary<Reads::output>(
        a, "TanhBackward", [](const Array& x) { return Array(xt::tanh(x)); },
        [](const Array& g, const Array& y) { return Array(g * (1.f - y * y)); },
        [](const Tensor& g, const Tensor& y) { return mul(g, add(neg(mul(y, y)), 1.f)); });
}

// A NaN input stays NaN (as torch's relu), so a NaN unit shows in the loss instead of becoming 0.
// torch keeps relu's whole result for backward; its derivative reads only whether each output
// is positive, so that is what xtgrad keeps: a bit per element, "result_positive" (a 32nd of the
// floats; the feed-forward's relu output is freed as soon as dropout or the next Linear is done).
Tensor relu(const Tensor& a) {
    detail::require_defined(a, "relu", "the input");
    // x, y: (n), element ranges over xtgrad's pool
    Array out = empty_array(a.shape());
    const float* __restrict x = a.ptr();
    float* __restrict y = out.data();
    const auto relu_at = [x, y](std::size_t i) { y[i] = x[i] <= 0.f ? 0.f : x[i]; };
    std::vector<SavedRecord> saved;
    if (records_graph({a})) {  // y and its bits in one pass over x
        BitMask positive(a.shape());
        write_and_pack_bits(positive, relu_at, [y](std::size_t i) { return y[i] > 0.f; });
        saved.push_back({"result_positive", std::move(positive)});
    } else {  // inference packs no bits
        parallel_rows(out.size(), 1, [&](std::size_t i0, std::size_t i1) {
            for (std::size_t i = i0; i < i1; ++i) relu_at(i);
        });
    }
    Tensor r = differentiable(make_result(std::move(out), "ReluBackward", {a}, std::move(saved),
                       [](Node& self, const Array& g) {
                           // dx = g where the output was positive, else 0 (a NaN g too, as torch's select)
                           const BitMask& positive = self.saved_bits("result_positive");
                           self.grad_out(0, shape_of(g)).write([&](float* dx, auto store) {
                               const float* __restrict gi = g.data();
                               float* __restrict d = dx;
                               // g read unconditionally: a load under the condition keeps GCC from vectorising
                               // the select (it was 7 % of seed-b's step)
                               for_each_bit(positive, [&](std::size_t i, float on) {
                                   const float gv = gi[i];
                                   store(d[i], on != 0.f ? gv : 0.f);
                               });
                           });
                       }),
        // relu'' = 0 (almost everywhere): g times a constant 0/1 mask
        [](const Node& self, const Tensor& g) -> Grads { return {mul(g, self.saved_constant("result_positive"))}; });
    return detail::with_jvp(r, {&a}, [&](const detail::Tangents& t) {  // t where the output is positive
        return mul(t[0], Tensor(Array(xt::where(r.data() > 0.f, 1.f, 0.f))));
    });
}

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& a) { return neg(a); }
Tensor operator+(const Tensor& a, float b) { return add(a, b); }
Tensor operator+(float a, const Tensor& b) { return add(b, a); }
Tensor operator-(const Tensor& a, float b) { return add(a, -b); }
Tensor operator-(float a, const Tensor& b) { return add(neg(b), a); }
Tensor operator*(const Tensor& a, float b) { return mul(a, b); }
Tensor operator*(float a, const Tensor& b) { return mul(b, a); }
Tensor operator/(const Tensor& a, float b) { return mul(a, 1.f / b); }
Tensor operator/(float a, const Tensor& b) { return mul(pow(b, -1.f), a); }

}  // namespace xtgrad
