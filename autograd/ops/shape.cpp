// Shape ops that move or reinterpret elements: permute, transpose, reshape/view, contiguous,
// unsqueeze, squeeze, expand. Every result is a new contiguous tensor; permute is a
// hand-written copy (xt::transpose copies are ~6x slower, docs/performance.md).
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/autograd/ops/common.hpp>
#include <xtgrad/threads/parallel.hpp>
#include <xtgrad/autograd/broadcast.hpp>

#include <xtensor/xbroadcast.hpp>

#include <algorithm>
#include <numeric>

namespace xtgrad {

namespace {

// out = x with axes reordered: out.shape[i] = x.shape[perm[i]].
Array permute_copy(const Array& x, const std::vector<std::size_t>& perm) {
    const Shape in = shape_of(x);
    const std::size_t nd = in.size();
    Shape out_shape(nd);
    std::vector<std::size_t> in_stride(nd), step(nd);
    for (std::size_t i = nd, s = 1; i-- > 0;) {
        in_stride[i] = s;
        s *= in[i];
    }
    for (std::size_t i = 0; i < nd; ++i) {
        out_shape[i] = in[perm[i]];
        step[i] = in_stride[perm[i]];  // input stride when output index i moves
    }
    Array out = empty_array(out_shape);
    if (out.size() == 0) return out;
    if (nd == 0) {
        out.data()[0] = x.data()[0];
        return out;
    }
    const float* src = x.data();
    const std::size_t inner = out_shape[nd - 1], inner_step = step[nd - 1];
    // The output's rows (its last axis) over the pool: a copy, so any split gives the same array.
    // One thread left seed-d's split_heads and merges (~3 % of its 2-thread step) to one core.
    parallel_rows(out.size() / inner, inner, [&](std::size_t r0, std::size_t r1) {
        std::vector<std::size_t> idx(nd, 0);  // row r0's index over the outer output axes
        std::size_t off = 0;
        for (std::size_t d = nd - 1, r = r0; d-- > 0;) {
            idx[d] = r % out_shape[d];
            r /= out_shape[d];
            off += idx[d] * step[d];
        }
        float* dst = out.data() + r0 * inner;
        for (std::size_t row = r0; row < r1; ++row, dst += inner) {
            if (inner_step == 1)
                std::copy(src + off, src + off + inner, dst);
            else
                for (std::size_t k = 0; k < inner; ++k) dst[k] = src[off + k * inner_step];
            for (std::size_t d = nd - 1; d-- > 0;) {  // odometer over the outer output axes
                ++idx[d];
                off += step[d];
                if (idx[d] < out_shape[d]) break;
                off -= step[d] * out_shape[d];
                idx[d] = 0;
            }
        }
    });
    return out;
}

// A reshape relabels the buffer of a temporary input (or std::move(t)) instead of copying it;
// torch's view shares it.
Tensor reshaped(Tensor a, const Shape& shape, const char* op) {
    const Shape in_shape = a.shape();
    Array out = detail::can_take_values(a) ? std::move(a).take_array() : a.data();
    out.reshape(shape);
    return detail::with_jvp(differentiable(make_result(std::move(out), op, {a}, {},
                                      [in_shape](Node& self, const Array& g) {
                                          if (Array* own = self.take_grad_out(g)) {  // nothing reads g after this node: relabel it
                                              own->reshape(in_shape);
                                              self.accumulate(0, std::move(*own));
                                              return;
                                          }
                                          Array gi = g;  // g is still read elsewhere (a hook, a retained .grad): a copy
                                          gi.reshape(in_shape);
                                          self.accumulate(0, std::move(gi));
                                      }),
                          [in_shape](const Node&, const Tensor& g) -> Grads {
                              return {reshape(g, std::vector<long>(in_shape.begin(), in_shape.end()))};
                          }),
                          {&a}, [&](const detail::Tangents& t) {  // linear: the same relabelling
                              return reshape(t[0], std::vector<long>(shape.begin(), shape.end()));
                          });
}

}  // namespace

Tensor permute(const Tensor& a, const std::vector<int>& dims) {
    detail::require_defined(a, "permute", "the input");
    const Shape s = a.shape();
    if (dims.size() != s.size())
        fail("permute: {} dims given for a tensor of shape {} ({} dims)", dims.size(), shape_str(s), s.size());
    std::vector<std::size_t> perm(dims.size()), inverse(dims.size());
    std::vector<bool> used(dims.size(), false);
    for (std::size_t i = 0; i < dims.size(); ++i) {
        perm[i] = detail::normalize_axis(dims[i], s.size(), "permute", s);
        if (used[perm[i]]) fail("permute: dims {} repeat axis {}", shape_str(dims), perm[i]);
        used[perm[i]] = true;
        inverse[perm[i]] = i;
    }
    return detail::with_jvp(differentiable(make_result(permute_copy(a.data(), perm), "PermuteBackward", {a}, {},
                                      [inverse](Node& self, const Array& g) { self.accumulate(0, permute_copy(g, inverse)); }),
                          [inverse](const Node&, const Tensor& g) -> Grads {
                              return {permute(g, std::vector<int>(inverse.begin(), inverse.end()))};
                          }),
                          {&a}, [&](const detail::Tangents& t) { return permute(t[0], dims); });
}

Tensor transpose(const Tensor& a, int dim0, int dim1) {
    detail::require_defined(a, "transpose", "the input");
    const std::size_t d0 = detail::normalize_axis(dim0, a.dim(), "transpose", a.shape());
    const std::size_t d1 = detail::normalize_axis(dim1, a.dim(), "transpose", a.shape());
    std::vector<int> dims(a.dim());
    std::iota(dims.begin(), dims.end(), 0);
    std::swap(dims[d0], dims[d1]);
    return permute(a, dims);
}

Tensor reshape(Tensor a, const std::vector<long>& shape) {
    detail::require_defined(a, "reshape", "the input");
    Shape out(shape.size(), 1);  // the -1, if any, counts as 1 until it is inferred
    int infer = -1;
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (shape[i] == -1) {
            if (infer >= 0) fail("reshape: only one dimension can be -1, got {}", shape_str(shape));
            infer = static_cast<int>(i);
        } else if (shape[i] < 0) {
            fail("reshape: invalid dimension {} in {}", shape[i], shape_str(shape));
        } else {
            out[i] = static_cast<std::size_t>(shape[i]);
        }
    }
    const std::size_t known = checked_numel(out, "reshape"), n = a.numel();
    if (infer >= 0) {
        if (known == 0 || n % known != 0)
            fail("reshape: cannot infer the -1 in {} for {} elements (shape {})", shape_str(shape), n, shape_str(a.shape()));
        out[static_cast<std::size_t>(infer)] = n / known;
    } else if (known != n) {
        fail("reshape: shape {} has {} elements but the input {} has {}", shape_str(shape), known, shape_str(a.shape()), n);
    }
    return reshaped(std::move(a), out, "ReshapeBackward");
}

Tensor view(Tensor a, const std::vector<long>& shape) { return reshape(std::move(a), shape); }

Tensor contiguous(const Tensor& a) {
    detail::require_defined(a, "contiguous", "the input");
    return a;  // every xtgrad tensor is contiguous already
}

Tensor unsqueeze(Tensor a, int dim) {
    detail::require_defined(a, "unsqueeze", "the input");
    Shape s = a.shape();
    const std::size_t d = detail::normalize_axis(dim, s.size() + 1, "unsqueeze", s);
    s.insert(s.begin() + static_cast<long>(d), 1);
    return reshaped(std::move(a), s, "UnsqueezeBackward");
}

Tensor squeeze(Tensor a, int dim) {
    detail::require_defined(a, "squeeze", "the input");
    Shape s = a.shape();
    const std::size_t d = detail::normalize_axis(dim, s.size(), "squeeze", s);
    if (s[d] != 1) return a;  // as torch: squeezing a dim that is not 1 is a no-op
    s.erase(s.begin() + static_cast<long>(d));
    return reshaped(std::move(a), s, "SqueezeBackward");
}

Tensor expand(const Tensor& a, const Shape& shape) {
    detail::require_defined(a, "expand", "the input");
    if (!broadcasts_to(a.shape(), shape))
        fail("expand: shape {} cannot be expanded to {}", shape_str(a.shape()), shape_str(shape));
    checked_numel(shape, "expand");
    Array out = xt::broadcast(a.data(), shape);
    // the backward sum over the expanded dims happens in Node::accumulate
    return detail::with_jvp(
        differentiable(make_result(std::move(out), "ExpandBackward", {a}, {},
                                   [](Node& self, const Array& g) { self.accumulate(0, g); }),
                       [](const Node&, const Tensor& g) -> Grads { return {g}; }),  // summed back by the engine
        {&a}, [&](const detail::Tangents& t) { return expand(t[0], shape); });
}

}  // namespace xtgrad
