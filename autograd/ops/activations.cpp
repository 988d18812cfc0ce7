// GELU in both of torch's forms, as plain loops (a learner can read the formula and its
// derivative side by side).
//   exact: gelu(x) = x Φ(x) = 0.5 x (1 + erf(x / √2)),  gelu'(x) = Φ(x) + x φ(x)
//   tanh:  gelu(x) ≈ 0.5 x (1 + tanh(u)),  u = √(2/π) (x + 0.044715 x³)
//          gelu'(x) = 0.5 (1 + t) + 0.5 x (1 - t²) √(2/π) (1 + 3·0.044715 x²),  t = tanh(u)
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/autograd/ops/activations.hpp>
#include <xtgrad/autograd/ops/common.hpp>
#include <xtgrad/autograd/forward_ad.hpp>
#include <xtgrad/threads/parallel.hpp>

#include <xtensor/xmath.hpp>

#include <cmath>

namespace xtgrad {

namespace {
constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;
constexpr float kSqrt2OverPi = 0.79788456080286536f;
constexpr float kCubic = 0.044715f;
}  // namespace

// x, y: (n); element ranges split over xtgrad's pool (parallel_rows), same result for any thread count.
void gelu_forward(const float* x, float* y, std::size_t n, GeluApproximation approx) {
    parallel_rows(n, 1, [&](std::size_t i0, std::size_t i1) {
        for (std::size_t i = i0; i < i1; ++i) {
            const float v = x[i];
            y[i] = approx == GeluApproximation::none ? 0.5f * v * (1.f + std::erf(v * kInvSqrt2))
                                                     : 0.5f * v * (1.f + std::tanh(kSqrt2OverPi * (v + kCubic * v * v * v)));
        }
    });
}

// x, g, dx: (n)
void gelu_backward(const float* x, const float* g, GradOut dx, std::size_t n, GeluApproximation approx) {
    if (!dx) return;
    dx.write([&](float* out, auto store) {
        parallel_rows(n, 1, [&](std::size_t i0, std::size_t i1) {  // element ranges over the pool
            for (std::size_t i = i0; i < i1; ++i) {
                const float v = x[i];
                float d;
                if (approx == GeluApproximation::none) {
                    d = 0.5f * (1.f + std::erf(v * kInvSqrt2)) + v * kInvSqrt2Pi * std::exp(-0.5f * v * v);
                } else {
                    const float t = std::tanh(kSqrt2OverPi * (v + kCubic * v * v * v));
                    d = 0.5f * (1.f + t) + 0.5f * v * (1.f - t * t) * kSqrt2OverPi * (1.f + 3.f * kCubic * v * v);
                }
                store(out[i], g[i] * d);
            }
        });
    });
}

namespace {
// φ(x) = exp(-x²/2) / √(2π), the normal density, in ops
Tensor normal_pdf(const Tensor& x) { return mul(exp(mul(mul(x, x), -0.5f)), kInvSqrt2Pi); }

// Φ(x) = (1 + erf(x / √2)) / 2, the normal distribution function, as an op of its own (xtgrad has
// no erf): exact GELU's derivative in ops needs it; Φ' = φ.
Tensor normal_cdf(const Tensor& x) {
    Array y = empty_array(x.shape());
    const float* xi = x.ptr();
    float* yi = y.data();
    for (std::size_t i = 0; i < y.size(); ++i) yi[i] = 0.5f * (1.f + std::erf(xi[i] * kInvSqrt2));
    return detail::with_jvp(differentiable(make_result(std::move(y), "NormalCdfBackward", {x}, {{"self", x}},
                                      [](Node& self, const Array& g) {
                                          const Array& v = self.saved("self");
                                          self.accumulate(0, Array(g * xt::exp(-0.5f * v * v) * kInvSqrt2Pi));
                                      }),
                          [](const Node& self, const Tensor& g) -> Grads {
                              return {mul(g, normal_pdf(self.saved_tensor("self")))};
                          }),
                          {&x}, [&](const detail::Tangents& t) { return mul(t[0], normal_pdf(x)); });
}

// gelu'(x) in ops (the header's formulas), so GELU's backward can be differentiated again
Tensor gelu_derivative(const Tensor& x, GeluApproximation approx) {
    if (approx == GeluApproximation::none) return add(normal_cdf(x), mul(x, normal_pdf(x)));
    const Tensor x2 = mul(x, x);
    const Tensor t = tanh(mul(add(x, mul(mul(x2, x), kCubic)), kSqrt2OverPi));
    const Tensor slope = mul(add(mul(x2, 3.f * kCubic), 1.f), kSqrt2OverPi);  // du/dx
    return add(mul(add(t, 1.f), 0.5f), mul(mul(mul(x, add(neg(mul(t, t)), 1.f)), slope), 0.5f));
}
}  // namespace

Tensor gelu(const Tensor& a, GeluApproximation approx) {
    detail::require_defined(a, "gelu", "the input");
    Array y = empty_array(a.shape());
    gelu_forward(a.ptr(), y.data(), a.numel(), approx);
    return detail::with_jvp(differentiable(
        make_result(std::move(y), approx == GeluApproximation::none ? "GeluBackward" : "GeluTanhBackward", {a},
                    {{"self", a}},
                    [approx](Node& self, const Array& g) {
                        const float* x = self.saved("self").data();
                        gelu_backward(x, g.data(), self.grad_out(0, shape_of(g)), g.size(), approx);
                    }),
        [approx](const Node& self, const Tensor& g) -> Grads {
            return {mul(g, gelu_derivative(self.saved_tensor("self"), approx))};
        }),
        {&a}, [&](const detail::Tangents& t) { return mul(t[0], gelu_derivative(a, approx)); });
}

}  // namespace xtgrad
