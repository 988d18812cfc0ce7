// softmax and log_softmax along any axis, as row kernels on raw buffers.
// Viewing x as (outer, len, inner) around the axis, each (outer, inner) pair is one row of
// `len` values `stride` = inner apart (inner = 1 for the last axis: contiguous rows).
//
// Stability: subtract the row max before exp. A row that is entirely -inf (every key
// masked with -inf) has no softmax (0/0): PyTorch silently returns NaN there; xtgrad
// throws an Error naming the row, so a fully masked attention row is never silent garbage.
// A row whose only non--inf values are NaN gets an Error that says NaN.
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/autograd/ops/softmax.hpp>
#include <xtgrad/autograd/ops/common.hpp>
#include <xtgrad/threads/parallel.hpp>
#include <xtgrad/simd/vector_kernels.hpp>

#include <cmath>
#include <limits>

namespace xtgrad {

namespace {

struct Rows {
    std::size_t outer, len, inner;
    std::size_t count() const { return outer * inner; }
    std::size_t start(std::size_t r) const { return (r / inner) * len * inner + r % inner; }
};

Rows rows_of(const Tensor& a, int dim, const char* op) {
    detail::require_defined(a, op, "the input");
    const Shape s = a.shape();
    if (s.empty()) fail("{}: needs at least one dim, got a scalar", op);
    const std::size_t axis = detail::normalize_axis(dim, s.size(), op, s);
    return {detail::prod(s, 0, axis), s[axis], detail::prod(s, axis + 1, s.size())};
}

// A row whose max is -inf: every value is -inf (fully masked), or NaN (max() skips NaN).
[[noreturn]] void fully_masked(const char* op, std::size_t row, const Shape& shape, const float* xr, std::size_t len,
                               std::size_t st) {
    for (std::size_t k = 0; k < len; ++k)
        if (std::isnan(xr[k * st]))
            fail("{}: row {} of a tensor of shape {} holds NaN (at position {} of the row), so its softmax is "
                 "NaN; the NaN comes from an earlier op (anomaly mode, AnomalyGuard, names it)", op, row,
                 shape_str(shape), k);
    fail("{}: row {} of a tensor of shape {} is entirely -inf (every position masked), so its softmax "
         "is 0/0. Fill masked scores with a large finite value such as -1e9 (tutorials B and C), or make "
         "sure every query keeps at least one key", op, row, shape_str(shape));
}

// Σ_k exp(x[k·st] - mx) over a row, each exp also written to y[k·st] when `store`. A contiguous
// row (st = 1: the last axis, attention scores) goes to the vector kernel (xsimd::exp, ~6x
// std::exp, AVX-512 where the CPU has it: simd/vector_kernels.hpp); strided rows use std::exp.
double exp_shifted(const float* x, float* y, std::size_t len, std::size_t st, float mx, bool store) {
    if (st == 1) return vec::exp_shifted_sum(x, y, len, mx, store);
    double sum = 0;
    for (std::size_t k = 0; k < len; ++k) {
        const float e = std::exp(x[k * st] - mx);
        if (store) y[k * st] = e;
        sum += e;
    }
    return sum;
}

}  // namespace

// One row of `len` values `st` apart (x and y may be the same buffer).
// A contiguous row (st = 1: the last axis, every attention row) takes the vector maximum and
// loops the compiler vectorises; the strided loops would not be.
void softmax_row(const float* xr, float* yr, std::size_t len, std::size_t st, bool log, const SoftmaxRowName& name) {
    float mx = -std::numeric_limits<float>::infinity();
    if (st == 1) mx = vec::max_value(xr, len);
    else
        for (std::size_t k = 0; k < len; ++k) mx = std::max(mx, xr[k * st]);
    if (mx == -std::numeric_limits<float>::infinity() && len > 0) fully_masked(name.op, name.row, name.shape, xr, len, st);
    const double sum = exp_shifted(xr, yr, len, st, mx, !log);
    if (log) {
        const float lse = mx + static_cast<float>(std::log(sum));
        if (st == 1)
            for (std::size_t k = 0; k < len; ++k) yr[k] = xr[k] - lse;
        else
            for (std::size_t k = 0; k < len; ++k) yr[k * st] = xr[k * st] - lse;
    } else {
        const float inv = static_cast<float>(1.0 / sum);
        if (st == 1)
            for (std::size_t k = 0; k < len; ++k) yr[k] *= inv;
        else
            for (std::size_t k = 0; k < len; ++k) yr[k * st] *= inv;
    }
}

namespace {

// y = x - max - log(sum(exp(x - max))) for log_softmax, or exp of the shifted values
// normalised for softmax. x, y: (outer, len, inner), one row per (outer, inner). Rows are
// independent, so they are split over xtgrad's pool (parallel_rows) with the same result for any
// thread count.
void softmax_rows(const float* x, float* y, const Rows& r, bool log, const char* op, const Shape& shape) {
    if (r.len == 0) return;  // rows of no values: nothing to write, however many (2^62 of them)
    parallel_rows(r.count(), r.len, [&](std::size_t row0, std::size_t row1) {
        for (std::size_t row = row0; row < row1; ++row)
            softmax_row(x + r.start(row), y + r.start(row), r.len, r.inner, log, {op, row, shape});
    });
}

}  // namespace

// Backward, per row: softmax      dx = y * (g - sum(g * y))
//                    log_softmax  dx = g - exp(y) * sum(g)
// g, y, dx: (outer, len, inner)
void softmax_backward(const float* g, const float* y, GradOut dx, std::size_t outer, std::size_t len,
                      std::size_t inner, bool log) {
    if (!dx || len == 0) return;
    const Rows r{outer, len, inner};
    dx.write([&](float* out, auto store) {
        parallel_rows(r.count(), len, [&](std::size_t row0, std::size_t row1) {  // rows independent
            for (std::size_t row = row0; row < row1; ++row) {
                const std::size_t s0 = r.start(row), st = r.inner;
                if (st == 1 && !log) {  // a contiguous row: the vector dot product, a loop that vectorises
                    const float* gr = g + s0;
                    const float* yr = y + s0;
                    float* o = out + s0;
                    const float d = static_cast<float>(vec::dot(gr, yr, len));
                    for (std::size_t k = 0; k < len; ++k) store(o[k], yr[k] * (gr[k] - d));
                    continue;
                }
                double dot = 0;
                for (std::size_t k = 0; k < len; ++k) dot += log ? g[s0 + k * st] : g[s0 + k * st] * y[s0 + k * st];
                const float d = static_cast<float>(dot);
                for (std::size_t k = 0; k < len; ++k) {
                    const std::size_t i = s0 + k * st;
                    store(out[i], log ? g[i] - std::exp(y[i]) * d : y[i] * (g[i] - d));
                }
            }
        });
    });
}

Tensor attach_softmax(Tensor y, const Tensor& a, int dim, bool log) {
    const Rows r = rows_of(a, dim, log ? "log_softmax" : "softmax");
    return detail::with_jvp(differentiable(
        attach_grad_fn(y, log ? "LogSoftmaxBackward" : "SoftmaxBackward", {a}, {{"result", y}},
                       [r, log](Node& self, const Array& g) {
                           const float* y = self.saved("result").data();
                           softmax_backward(g.data(), y, self.grad_out(0, shape_of(g)), r.outer, r.len, r.inner, log);
                       }),
        // the same formulas in ops; y is the result as a tensor of the graph, so its own dependence
        // on the input is differentiated too (the part a fused second derivative would miss)
        [dim, log](const Node& self, const Tensor& g) -> Grads {
            const Tensor y = self.saved_tensor("result");
            if (log) return {sub(g, mul(exp(y), sum(g, {dim}, true)))};
            return {mul(y, sub(g, sum(mul(g, y), {dim}, true)))};
        }),
        // jvp: softmax  y (t - Σ y t);  log_softmax  t - Σ softmax · t
        {&a}, [&](const detail::Tangents& t) {
            if (log) return sub(t[0], sum(mul(exp(y), t[0]), {dim}, true));
            return mul(y, sub(t[0], sum(mul(y, t[0]), {dim}, true)));
        });
}

namespace {
Tensor softmax_op(const Tensor& a, int dim, bool log) {
    const char* op = log ? "log_softmax" : "softmax";
    const Rows r = rows_of(a, dim, op);
    Tensor y(empty_array(a.shape()));
    softmax_rows(a.ptr(), y.mutable_ptr(), r, log, op, a.shape());
    return attach_softmax(std::move(y), a, dim, log);
}
}  // namespace

Tensor softmax(const Tensor& a, int dim) { return softmax_op(a, dim, false); }
Tensor log_softmax(const Tensor& a, int dim) { return softmax_op(a, dim, true); }

}  // namespace xtgrad
