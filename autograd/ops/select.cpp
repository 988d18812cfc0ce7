// Ops that pick positions along one axis: narrow, slice, split, chunk, index_select, and
// cat (whose backward picks). One gather kernel and one scatter-add kernel serve them all:
// viewing a tensor as (outer, len, inner) around the axis, position k of the output is the
// row index[k] of the input.
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/autograd/ops/common.hpp>

#include <algorithm>
#include <memory>

namespace xtgrad {

namespace {

struct AxisView {
    std::size_t outer, len, inner;
};
AxisView around(const Shape& s, std::size_t axis) {
    return {detail::prod(s, 0, axis), s[axis], detail::prod(s, axis + 1, s.size())};
}

// out[o, k, i] = x[o, index[k], i]
Array gather_along(const Array& x, std::size_t axis, const std::vector<std::size_t>& index) {
    const Shape s = shape_of(x);
    const AxisView v = around(s, axis);
    Shape out_shape = s;
    out_shape[axis] = index.size();
    Array out = empty_array(out_shape);
    const float* src = x.data();
    float* dst = out.data();
    for (std::size_t o = 0; o < v.outer; ++o)
        for (std::size_t k = 0; k < index.size(); ++k, dst += v.inner) {
            const float* row = src + (o * v.len + index[k]) * v.inner;
            std::copy(row, row + v.inner, dst);
        }
    return out;
}

// The adjoint of gather_along: dx[o, index[k], i] += g[o, k, i] (repeated indices add up).
void scatter_add_along(const Array& g, std::size_t axis, const std::vector<std::size_t>& index, const Shape& x_shape,
                       GradOut dx) {
    const AxisView v = around(x_shape, axis);
    const float* src = g.data();
    float* dst = dx.zeroed();
    for (std::size_t o = 0; o < v.outer; ++o)
        for (std::size_t k = 0; k < index.size(); ++k, src += v.inner) {
            float* row = dst + (o * v.len + index[k]) * v.inner;
            for (std::size_t i = 0; i < v.inner; ++i) row[i] += src[i];
        }
}

using Index = std::shared_ptr<const std::vector<std::size_t>>;  // shared by a node's two backwards
Tensor scatter_along(const Tensor& g, std::size_t axis, Index index, const Shape& x_shape);

// gather and scatter-add are each other's backward, so both differentiate to any order.
Tensor select_along(const Tensor& a, std::size_t axis, Index index, const char* op) {
    const Shape s = a.shape();
    Array out = gather_along(a.data(), axis, *index);
    return detail::with_jvp(differentiable(make_result(std::move(out), op, {a}, {},
                                      [axis, index, s](Node& self, const Array& g) {
                                          scatter_add_along(g, axis, *index, s, self.grad_out(0, s));
                                      }),
                          [axis, index, s](const Node&, const Tensor& g) -> Grads {
                              return {scatter_along(g, axis, index, s)};
                          }),
                          {&a}, [&](const detail::Tangents& t) { return select_along(t[0], axis, index, op); });
}

// g (…, index.size(), …) added into zeros of x_shape at the rows index names: the backward of a gather.
Tensor scatter_along(const Tensor& g, std::size_t axis, Index index, const Shape& x_shape) {
    Array out = empty_array(x_shape);
    scatter_add_along(g.data(), axis, *index, x_shape, GradOut::overwrite(out.data(), out.size()));
    return detail::with_jvp(differentiable(make_result(std::move(out), "ScatterAddBackward", {g}, {},
                                      [axis, index](Node& self, const Array& gg) {
                                          self.accumulate(0, gather_along(gg, axis, *index));
                                      }),
                          [axis, index](const Node&, const Tensor& gg) -> Grads {
                              return {select_along(gg, axis, index, "IndexSelectBackward")};
                          }),
                          {&g}, [&](const detail::Tangents& t) { return scatter_along(t[0], axis, index, x_shape); });
}

Tensor select_along(const Tensor& a, std::size_t axis, std::vector<std::size_t> index, const char* op) {
    return select_along(a, axis, std::make_shared<const std::vector<std::size_t>>(std::move(index)), op);
}

}  // namespace

Tensor detail::scatter_add_rows(const Tensor& src, std::vector<std::size_t> index, std::size_t rows) {
    Shape shape = src.shape();
    shape[0] = rows;
    return scatter_along(src, 0, std::make_shared<const std::vector<std::size_t>>(std::move(index)), shape);
}

namespace {

std::vector<std::size_t> range_index(std::size_t start, std::size_t stop, std::size_t step) {
    std::vector<std::size_t> idx;
    for (std::size_t i = start; i < stop; i += step) idx.push_back(i);
    return idx;
}

}  // namespace

Tensor narrow(const Tensor& a, int dim, std::size_t start, std::size_t length) {
    detail::require_defined(a, "narrow", "the input");
    const std::size_t axis = detail::normalize_axis(dim, a.dim(), "narrow", a.shape());
    if (start > a.shape()[axis] || length > a.shape()[axis] - start)  // start + length could wrap
        fail("narrow: start {} + length {} exceeds dim {} of size {} (shape {})", start, length, dim, a.shape()[axis],
             shape_str(a.shape()));
    return select_along(a, axis, range_index(start, start + length, 1), "NarrowBackward");
}

Tensor slice(const Tensor& a, int dim, long start, long end, long step) {
    detail::require_defined(a, "slice", "the input");
    const std::size_t axis = detail::normalize_axis(dim, a.dim(), "slice", a.shape());
    if (step <= 0) fail("slice: step must be positive, got {}", step);
    const long len = static_cast<long>(a.shape()[axis]);
    auto clamp = [len](long i) { return std::clamp(i < 0 ? i + len : i, 0L, len); };  // Python's rules
    const long b = clamp(start), e = clamp(end);
    return select_along(a, axis, range_index(static_cast<std::size_t>(b), static_cast<std::size_t>(std::max(b, e)),
                                             static_cast<std::size_t>(step)),
                        "SliceBackward");
}

std::vector<Tensor> split(const Tensor& a, std::size_t split_size, int dim) {
    detail::require_defined(a, "split", "the input");
    const std::size_t axis = detail::normalize_axis(dim, a.dim(), "split", a.shape());
    if (split_size == 0) fail("split: split_size must be positive");
    std::vector<Tensor> parts;
    for (std::size_t s = 0, len = a.shape()[axis]; s < len; s += split_size)
        parts.push_back(narrow(a, dim, s, std::min(split_size, len - s)));
    return parts;
}

std::vector<Tensor> chunk(const Tensor& a, std::size_t chunks, int dim) {
    detail::require_defined(a, "chunk", "the input");
    if (chunks == 0) fail("chunk: the number of chunks must be positive");
    const std::size_t axis = detail::normalize_axis(dim, a.dim(), "chunk", a.shape());
    const std::size_t len = a.shape()[axis];
    return split(a, std::max<std::size_t>(1, (len + chunks - 1) / chunks), dim);  // torch's chunk sizes
}

Tensor index_select(const Tensor& a, int dim, const Ids& index) {
    detail::require_defined(a, "index_select", "the input");
    const std::size_t axis = detail::normalize_axis(dim, a.dim(), "index_select", a.shape());
    if (index.dimension() != 1) fail("index_select: index must be 1-D, got shape {}", shape_str(index.shape()));
    std::vector<std::size_t> idx;
    for (std::int64_t i : index) {
        if (i < 0 || static_cast<std::size_t>(i) >= a.shape()[axis])
            fail("index_select: index {} is out of range for dim {} of size {} (shape {})", i, dim, a.shape()[axis],
                 shape_str(a.shape()));
        idx.push_back(static_cast<std::size_t>(i));
    }
    return select_along(a, axis, std::move(idx), "IndexSelectBackward");
}

Tensor cat(const std::vector<Tensor>& tensors, int dim) {
    if (tensors.empty()) fail("cat: needs at least one tensor");
    for (const Tensor& t : tensors) detail::require_defined(t, "cat", "an input");
    const Shape first = tensors[0].shape();
    const std::size_t axis = detail::normalize_axis(dim, first.size(), "cat", first);
    Shape out_shape = first;
    out_shape[axis] = 0;
    std::vector<std::size_t> lens;
    for (const Tensor& t : tensors) {
        Shape s = t.shape();
        if (s.size() != first.size()) fail("cat: tensors {} and {} differ in rank", shape_str(first), shape_str(s));
        for (std::size_t i = 0; i < s.size(); ++i)
            if (i != axis && s[i] != first[i])
                fail("cat: along dim {}, shapes {} and {} differ in dim {}", dim, shape_str(first), shape_str(s), i);
        lens.push_back(s[axis]);
        if (__builtin_add_overflow(out_shape[axis], s[axis], &out_shape[axis]))
            fail("cat: along dim {}, the sizes {} add past a size_t", dim, fmt::join(lens, " + "));
    }
    Array out = empty_array(out_shape);
    const AxisView v = around(out_shape, axis);
    std::size_t offset = 0;  // start of the current part along the axis
    for (std::size_t p = 0; p < tensors.size() && out.size() != 0; ++p) {  // empty: no copy, however many rows
        const float* src = tensors[p].ptr();
        const std::size_t block = lens[p] * v.inner;
        for (std::size_t o = 0; o < v.outer; ++o)
            std::copy(src + o * block, src + (o + 1) * block, out.data() + (o * v.len + offset) * v.inner);
        offset += lens[p];
    }
    return detail::with_jvp(differentiable(
        make_result(std::move(out), "CatBackward", tensors, {},
                    [axis, lens](Node& self, const Array& g) {
                        std::size_t start = 0;
                        for (std::size_t p = 0; p < lens.size(); ++p) {
                            if (self.needs_grad(p))
                                self.accumulate(p, gather_along(g, axis, range_index(start, start + lens[p], 1)));
                            start += lens[p];
                        }
                    }),
        [axis, lens](const Node& self, const Tensor& g) -> Grads {
            Grads out(lens.size());
            std::size_t start = 0;
            for (std::size_t p = 0; p < lens.size(); ++p) {
                if (self.needs_grad(p)) out[p] = select_along(g, axis, range_index(start, start + lens[p], 1), "NarrowBackward");
                start += lens[p];
            }
            return out;
        }),
        tensors, [&](const detail::Tangents& t) {  // the tangents side by side, zeros for inputs without one
            std::vector<Tensor> parts;
            for (std::size_t p = 0; p < tensors.size(); ++p) parts.push_back(t.has(p) ? t[p] : Tensor::zeros(tensors[p].shape()));
            return cat(parts, dim);
        });
}

}  // namespace xtgrad
