// Helpers shared by the op implementations (not part of the public API).
#pragma once

#include <xtgrad/autograd/anomaly.hpp>
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/forward_ad.hpp>
#include <xtgrad/autograd/node.hpp>
#include <xtgrad/autograd/tensor.hpp>

#include <limits>

namespace xtgrad::detail {

// A negative axis counts from the end; anything outside [-n, n) is an Error naming the op.
inline std::size_t normalize_axis(int axis, std::size_t ndim, const char* op, const Shape& shape) {
    const long n = static_cast<long>(ndim);
    const long a = axis < 0 ? axis + n : axis;
    if (a < 0 || a >= n) fail("{}: dim {} is out of range for a tensor of shape {}", op, axis, shape_str(shape));
    return static_cast<std::size_t>(a);
}

// Product of shape[begin, end).
inline std::size_t prod(const Shape& s, std::size_t begin, std::size_t end) {
    std::size_t p = 1;
    for (std::size_t i = begin; i < end; ++i) p *= s[i];
    return p;
}

// Whether an op given `t` by value may take its buffer (Tensor::sole_holder): never in anomaly
// mode, whose forward check reads the inputs' values after the op.
inline bool can_take_values(const Tensor& t) { return !anomaly_detection_enabled() && t.sole_holder(); }

inline void require_defined(const Tensor& t, const char* op, const char* what) {
    if (!t.defined()) fail("{}: {} is an undefined tensor", op, what);
}

// A size passed to the GEMM (BLAS takes int), or an Error naming the op.
inline int to_blas_int(std::size_t v, const char* op) {
    if (v > static_cast<std::size_t>(std::numeric_limits<int>::max())) fail("{}: dimension {} exceeds BLAS's int range", op, v);
    return static_cast<int>(v);
}

// src (n, ...) added into zeros (rows, ...) at rows index[0 .. n): index_select's backward along
// dim 0, as an op whose own backward is that gather (ops/select.cpp); embedding's backward in ops.
Tensor scatter_add_rows(const Tensor& src, std::vector<std::size_t> index, std::size_t rows);

}  // namespace xtgrad::detail
