// masked_fill, triu, tril: ops that replace some elements by a constant. The gradient of a
// replaced element is 0 (it no longer depends on the input); the others pass through.
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/autograd/ops/common.hpp>
#include <xtgrad/autograd/broadcast.hpp>

#include <xtensor/xbroadcast.hpp>


namespace xtgrad {

namespace {
// replaced[i] = true where the element is replaced by `value`.
Tensor replace_where(const Tensor& a, Mask replaced, float value, const char* op) {
    Array out = a.data();
    const bool* m = replaced.data();
    float* o = out.data();
    for (std::size_t i = 0; i < out.size(); ++i)
        if (m[i]) o[i] = value;
    const Mask kept = detail::forward_active() ? replaced : Mask();  // for the jvp: `replaced` moves into the node
    return detail::with_jvp(differentiable(
        make_result(std::move(out), op, {a}, {{"mask", std::move(replaced)}},
                    [](Node& self, const Array& g) {
                        // dx = replaced ? 0 : g, all of a's shape
                        const Mask& replaced = self.saved_mask("mask");
                        self.grad_out(0, shape_of(g)).write([&](float* dx, auto store) {
                            const bool* m = replaced.data();
                            const float* gi = g.data();
                            for (std::size_t i = 0; i < g.size(); ++i) store(dx[i], m[i] ? 0.f : gi[i]);
                        });
                    }),
        [](const Node& self, const Tensor& g) -> Grads { return {masked_fill(g, self.saved_mask("mask"), 0.f)}; }),
        // jvp: a replaced element is a constant, so its tangent is 0
        {&a}, [&](const detail::Tangents& t) { return replace_where(t[0], kept, 0.f, op); });
}

// For the last two dims (rows, cols): replaced where (col - row) is outside the kept band.
Mask band_mask(const Shape& s, long diagonal, bool upper, const char* op) {
    if (s.size() < 2) fail("{}: needs at least 2 dims, got shape {}", op, shape_str(s));
    Mask m = Mask::from_shape(s);
    const std::size_t rows = s[s.size() - 2], cols = s.back();
    bool* p = m.data();
    for (std::size_t i = 0; i < m.size(); ++i) {
        const long r = static_cast<long>((i / cols) % rows), c = static_cast<long>(i % cols);
        p[i] = upper ? (c - r < diagonal) : (c - r > diagonal);
    }
    return m;
}
}  // namespace

Tensor masked_fill(const Tensor& a, const Mask& mask, float value) {
    detail::require_defined(a, "masked_fill", "the input");
    const Shape ms(mask.shape().begin(), mask.shape().end());
    if (!broadcasts_to(ms, a.shape()))
        fail("masked_fill: mask of shape {} does not broadcast to the input's shape {}", shape_str(ms),
             shape_str(a.shape()));
    return replace_where(a, Mask(xt::broadcast(mask, a.shape())), value, "MaskedFillBackward");
}

Tensor triu(const Tensor& a, long diagonal) {
    detail::require_defined(a, "triu", "the input");
    return replace_where(a, band_mask(a.shape(), diagonal, true, "triu"), 0.f, "TriuBackward");
}

Tensor tril(const Tensor& a, long diagonal) {
    detail::require_defined(a, "tril", "the input");
    return replace_where(a, band_mask(a.shape(), diagonal, false, "tril"), 0.f, "TrilBackward");
}

}  // namespace xtgrad
