// Reductions: sum, mean, var, std over axes (keepdim), max / argmax along one axis.
// Axis sums go through sum_keepdim (autograd/reduce_kernels.cpp), never xtensor's reducers.
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/autograd/ops/common.hpp>
#include <xtgrad/autograd/reduce_kernels.hpp>

#include <xtensor/xbroadcast.hpp>
#include <xtensor/xmath.hpp>

#include <algorithm>
#include <limits>

namespace xtgrad {

namespace {

// Normalized, sorted, unique axes; an empty list means "all axes".
std::vector<std::size_t> reduce_axes(const std::vector<int>& dims, const Shape& shape, const char* op) {
    std::vector<std::size_t> axes;
    if (dims.empty())
        for (std::size_t i = 0; i < shape.size(); ++i) axes.push_back(i);
    for (int d : dims) axes.push_back(detail::normalize_axis(d, shape.size(), op, shape));
    std::sort(axes.begin(), axes.end());
    if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
        fail("{}: dims {} name the same axis twice", op, shape_str(dims));
    return axes;
}

// The input shape with the reduced axes set to 1 (keepdim) or removed.
Shape reduced_shape(const Shape& shape, const std::vector<std::size_t>& axes, bool keepdim) {
    Shape out;
    for (std::size_t i = 0; i < shape.size(); ++i) {
        const bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
        if (!reduced) out.push_back(shape[i]);
        else if (keepdim) out.push_back(1);
    }
    return out;
}

std::size_t count_of(const Shape& shape, const std::vector<std::size_t>& axes) {
    std::size_t n = 1;
    for (std::size_t a : axes) n *= shape[a];
    return n;
}

// g (reduced shape) spread back over the input shape, times `scale`.
Array spread(const Array& g, const Shape& input_shape, const std::vector<std::size_t>& axes, float scale) {
    Array gk = g;
    gk.reshape(reduced_shape(input_shape, axes, true));
    return Array(xt::broadcast(gk, input_shape) * scale);
}

// spread() in ops: g (reduced) back over the reduced axes of input_shape, times scale
Tensor spread_in_ops(const Tensor& g, const Shape& input_shape, const std::vector<std::size_t>& axes, float scale) {
    const Shape keep = reduced_shape(input_shape, axes, true);
    const Tensor gk = reshape(g, std::vector<long>(keep.begin(), keep.end()));
    const Tensor spread = expand(gk, input_shape);
    return scale == 1.f ? spread : mul(spread, scale);
}

// var's and std's saved "centered" (x minus its mean over axes) as a tensor of the graph: the
// values as saved, joined to x (the node's input) by a node of their own, d centered = g - mean(g),
// so a backward in ops that reads it depends on x without the forward keeping x.
Tensor saved_centered(const Node& self, const std::vector<std::size_t>& axes) {
    const std::vector<int> dims(axes.begin(), axes.end());
    const float n = static_cast<float>(count_of(self.inputs()[0]->shape(), axes));
    const Tensor x = self.input(0);
    return detail::with_jvp(differentiable(
        attach_grad_fn(Tensor(self.saved("centered")), "CenteredBackward", {x}, {},
                       [axes, n](Node& node, const Array& g) {
                           Array m = sum_keepdim(g, axes);
                           m /= n;
                           node.accumulate(0, Array(g - xt::broadcast(m, g.shape())));
                       }),
        [dims](const Node&, const Tensor& g) -> Grads { return {sub(g, mean(g, dims, true))}; }),
        {&x}, [&](const detail::Tangents& t) { return sub(t[0], mean(t[0], dims, true)); });
}

Tensor sum_scaled(const Tensor& a, const std::vector<int>& dims, bool keepdim, bool mean, const char* fwd,
                  const char* op) {
    detail::require_defined(a, fwd, "the input");
    const Shape in_shape = a.shape();
    const std::vector<std::size_t> axes = reduce_axes(dims, in_shape, fwd);
    const std::size_t n = count_of(in_shape, axes);
    if (mean && n == 0) fail("{}: cannot average over zero elements (shape {})", fwd, shape_str(in_shape));
    const float scale = mean ? 1.f / static_cast<float>(n) : 1.f;
    Array out = sum_keepdim(a.data(), axes);
    if (mean) out *= scale;
    out.reshape(reduced_shape(in_shape, axes, keepdim));
    return detail::with_jvp(differentiable(make_result(std::move(out), op, {a}, {},
                                      [in_shape, axes, scale](Node& self, const Array& g) {
                                          self.accumulate(0, spread(g, in_shape, axes, scale));
                                      }),
                          [in_shape, axes, scale](const Node&, const Tensor& g) -> Grads {
                              return {spread_in_ops(g, in_shape, axes, scale)};
                          }),
                          {&a}, [&](const detail::Tangents& t) { return sum_scaled(t[0], dims, keepdim, mean, fwd, op); });
}

}  // namespace

Tensor sum(const Tensor& a) { return sum(a, {}, false); }
Tensor sum(const Tensor& a, const std::vector<int>& dims, bool keepdim) {
    return sum_scaled(a, dims, keepdim, false, "sum", "SumBackward");
}
Tensor mean(const Tensor& a) { return mean(a, {}, false); }
Tensor mean(const Tensor& a, const std::vector<int>& dims, bool keepdim) {
    return sum_scaled(a, dims, keepdim, true, "mean", "MeanBackward");
}

namespace {
// x - mean and sum((x - mean)^2) / (n - unbiased) over `axes`, shared by var and stddev.
struct Spread {
    Array centered;  // (in_shape)
    Array var;       // (reduced shape, keepdim as asked)
    float denom;
};
Spread spread_of(const Tensor& a, const std::vector<std::size_t>& axes, bool unbiased, bool keepdim, const char* op) {
    const Shape in_shape = a.shape();
    const std::size_t n = count_of(in_shape, axes);
    if (n <= (unbiased ? 1u : 0u))
        fail("{}: {} element(s) along the reduced dims of {} are too few for the {} estimate", op, n,
             shape_str(in_shape), unbiased ? "unbiased" : "biased");
    const float denom = static_cast<float>(n - (unbiased ? 1 : 0));
    Array m = sum_keepdim(a.data(), axes);
    m /= static_cast<float>(n);
    Array centered = a.data() - xt::broadcast(m, in_shape);
    Array var = sum_keepdim(Array(centered * centered), axes);
    var /= denom;
    var.reshape(reduced_shape(in_shape, axes, keepdim));
    return {std::move(centered), std::move(var), denom};
}
}  // namespace

// Σ (x - mean) · t over axes, in ops: var's jvp is 2 / denom times it, std's 1 / (denom · std).
Tensor centered_dot(const Tensor& x, const Tensor& t, const std::vector<std::size_t>& axes, bool keepdim) {
    const std::vector<int> dims(axes.begin(), axes.end());
    return sum(mul(sub(x, mean(x, dims, true)), t), dims, keepdim);
}

// var = sum((x - mean)^2) / (n - unbiased);  dvar/dx = 2 (x - mean) / (n - unbiased)
Tensor var(const Tensor& a, const std::vector<int>& dims, bool unbiased, bool keepdim) {
    detail::require_defined(a, "var", "the input");
    const Shape in_shape = a.shape();
    const std::vector<std::size_t> axes = reduce_axes(dims, in_shape, "var");
    Spread s = spread_of(a, axes, unbiased, keepdim, "var");
    // torch's VarBackward saves self and recomputes the mean; this saves x - mean ("centered")
    const float denom = s.denom;
    return detail::with_jvp(differentiable(
        make_result(std::move(s.var), "VarBackward", {a}, {{"centered", std::move(s.centered)}},
                    [in_shape, axes, denom = s.denom](Node& self, const Array& g) {
                        self.accumulate(0, Array(spread(g, in_shape, axes, 2.f / denom) * self.saved("centered")));
                    }),
        [in_shape, axes, denom = s.denom](const Node& self, const Tensor& g) -> Grads {
            return {mul(spread_in_ops(g, in_shape, axes, 2.f / denom), saved_centered(self, axes))};
        }),
        {&a}, [&](const detail::Tangents& t) { return mul(centered_dot(a, t[0], axes, keepdim), 2.f / denom); });
}

// std = sqrt(var);  dstd/dx = (x - mean) / ((n - unbiased) std), and 0 where std is 0 (a constant
// row), as torch's std_backward: composing sqrt and var would give 0 · ∞ = NaN there.
Tensor stddev(const Tensor& a, const std::vector<int>& dims, bool unbiased, bool keepdim) {
    detail::require_defined(a, "std", "the input");
    const Shape in_shape = a.shape();
    const std::vector<std::size_t> axes = reduce_axes(dims, in_shape, "std");
    Spread s = spread_of(a, axes, unbiased, keepdim, "std");
    Tensor result{Array(xt::sqrt(s.var))};
    const float denom = s.denom;
    return detail::with_jvp(differentiable(
        attach_grad_fn(result, "StdBackward", {a},
                       {{"centered", std::move(s.centered)}, {"result", result}},
                       [in_shape, axes, denom = s.denom](Node& self, const Array& g) {
                           const Array& result = self.saved("result");
                           const Array per_row = xt::where(xt::equal(result, 0.f), 0.f, g / (result * denom));
                           self.accumulate(0, Array(spread(per_row, in_shape, axes, 1.f) * self.saved("centered")));
                       }),
        // d std = centered / (std · denom); a zero std gives 0 as the kernel does (a constant mask
        // keeps the division finite there)
        [in_shape, axes, denom = s.denom](const Node& self, const Tensor& g) -> Grads {
            const Tensor std_ = self.saved_tensor("result");
            const Tensor zero = Tensor(Array(xt::cast<float>(xt::equal(std_.data(), 0.f))));
            const Tensor per_row = mul(div(g, mul(add(std_, zero), denom)), add(neg(zero), 1.f));
            return {mul(spread_in_ops(per_row, in_shape, axes, 1.f), saved_centered(self, axes))};
        }),
        // jvp: Σ centered · t / (denom · std), 0 where std is 0 (as the backward)
        {&a}, [&](const detail::Tangents& t) {
            const Tensor zero = Tensor(Array(xt::cast<float>(xt::equal(result.data(), 0.f))));
            return mul(div(centered_dot(a, t[0], axes, keepdim), mul(add(result, zero), denom)), add(neg(zero), 1.f));
        });
}

namespace {
// For each (outer, inner) position, the index along `axis` of the first maximum. NaN wins
// (as torch.max), so a NaN is never hidden by the reduction.
Ids argmax_along(const Array& x, std::size_t axis) {
    const Shape s = shape_of(x);
    const std::size_t outer = detail::prod(s, 0, axis), len = s[axis], inner = detail::prod(s, axis + 1, s.size());
    Ids idx = Ids::from_shape(reduced_shape(s, {axis}, false));
    const float* p = x.data();
    for (std::size_t o = 0; o < outer; ++o)
        for (std::size_t i = 0; i < inner; ++i) {
            const float* row = p + o * len * inner + i;
            std::size_t best = 0;
            for (std::size_t k = 1; k < len; ++k) {
                const float v = row[k * inner], b = row[best * inner];
                if (v > b || (v != v && b == b)) best = k;
            }
            idx.data()[o * inner + i] = static_cast<std::int64_t>(best);
        }
    return idx;
}
}  // namespace

Ids argmax(const Tensor& a, int dim, bool keepdim) {
    detail::require_defined(a, "argmax", "the input");
    const std::size_t axis = detail::normalize_axis(dim, a.dim(), "argmax", a.shape());
    if (a.shape()[axis] == 0) fail("argmax: dim {} of shape {} is empty", dim, shape_str(a.shape()));
    Ids idx = argmax_along(a.data(), axis);
    idx.reshape(reduced_shape(a.shape(), {axis}, keepdim));
    return idx;
}

Tensor max(const Tensor& a, int dim, bool keepdim) {
    detail::require_defined(a, "max", "the input");
    const Shape s = a.shape();
    const std::size_t axis = detail::normalize_axis(dim, s.size(), "max", s);
    if (s[axis] == 0) fail("max: dim {} of shape {} is empty", dim, shape_str(s));
    const std::size_t len = s[axis], inner = detail::prod(s, axis + 1, s.size());
    Ids idx = argmax_along(a.data(), axis);
    Array out = Array::from_shape(reduced_shape(s, {axis}, false));
    const float* x = a.ptr();
    for (std::size_t j = 0; j < out.size(); ++j) {
        const std::size_t o = j / inner, i = j % inner;
        out.data()[j] = x[(o * len + static_cast<std::size_t>(idx.data()[j])) * inner + i];
    }
    out.reshape(reduced_shape(s, {axis}, keepdim));
    // a constant one-hot of the maxima over a's shape
    const auto onehot_of = [s, len, inner](const Ids& idx) {
        Array onehot = xt::zeros<float>(s);
        for (std::size_t j = 0; j < idx.size(); ++j) {
            const std::size_t o = j / inner, i = j % inner;
            onehot.data()[(o * len + static_cast<std::size_t>(idx.data()[j])) * inner + i] = 1.f;
        }
        return Tensor(std::move(onehot));
    };
    const Tensor maxima = detail::forward_active() ? onehot_of(idx) : Tensor();  // for the jvp: idx moves into the node
    // backward: the gradient goes to the position of the (first) maximum
    return detail::with_jvp(differentiable(
        make_result(std::move(out), "MaxBackward", {a}, {{"indices", std::move(idx)}},
                    [s, len, inner](Node& self, const Array& g) {
                        const Ids& idx = self.saved_ids("indices");
                        float* dx = self.grad_out(0, s).zeroed();  // a scatter: (outer, len, inner) += g at the maxima
                        for (std::size_t j = 0; j < idx.size(); ++j) {
                            const std::size_t o = j / inner, i = j % inner;
                            dx[(o * len + static_cast<std::size_t>(idx.data()[j])) * inner + i] += g.data()[j];
                        }
                    }),
        // in ops: g spread along the axis, times a constant one-hot of the maxima
        [s, axis, onehot_of](const Node& self, const Tensor& g) -> Grads {
            return {mul(spread_in_ops(g, s, {axis}, 1.f), onehot_of(self.saved_ids("indices")))};
        }),
        // jvp: the tangent at the (first) maximum
        {&a}, [&](const detail::Tangents& t) { return sum(mul(t[0], maxima), {static_cast<int>(axis)}, keepdim); });
}

}  // namespace xtgrad
