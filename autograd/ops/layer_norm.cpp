// layer_norm over the last dim, fused forward and backward row kernels (torch's LayerNorm:
// biased variance, eps inside the square root).
//   x (R, d) rows;  mean_r, rstd_r = 1 / sqrt(var_r + eps);  xhat = (x - mean) rstd
//   y = xhat * weight + bias
// Backward (docs/derivations.md#layernorm), per row with dxhat = g * weight:
//   dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
//   dweight += Σ_rows g * xhat;  dbias += Σ_rows g
#include <xtgrad/autograd/ops/layer_norm.hpp>
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/autograd/ops/common.hpp>
#include <xtgrad/threads/parallel.hpp>

#include <cmath>
#include <limits>

namespace xtgrad {

namespace {
// Σ_j term(j) for j in [0, n), in double, as 8 interleaved partial sums (lane k takes j ≡ k mod 8)
// added pairwise at the end. One running double sum is a chain of dependent adds (~4 cycles per
// element: layer norm ran at ~1.7 ns per element, 5 % of seed-d's bf16 step); 8 independent
// lanes vectorise. The order is fixed, so every thread count gives the same bits.
template <class Term>
double sum8(std::size_t n, Term term) {
    double acc[8] = {};
    std::size_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (std::size_t k = 0; k < 8; ++k) acc[k] += term(j + k);
    for (std::size_t k = 0; j < n; ++j, ++k) acc[k] += term(j);
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}
}  // namespace

// x, y: (rows, d); mean, rstd: (rows). Rows are independent: split over xtgrad's pool
// (parallel_rows), the same result for any thread count.
void layer_norm_forward(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd,
                        std::size_t rows, std::size_t d, float eps) {
    parallel_rows(rows, d, [&](std::size_t r0, std::size_t r1) {
        for (std::size_t r = r0; r < r1; ++r) {
            const float* xr = x + r * d;
            float* yr = y + r * d;
            const double s = sum8(d, [xr](std::size_t j) { return static_cast<double>(xr[j]); });
            const float m = static_cast<float>(s / static_cast<double>(d));
            const double v = sum8(d, [xr, m](std::size_t j) {
                const float c = xr[j] - m;  // centred in float, squared in double
                return static_cast<double>(c) * c;
            });
            // A variance past float's range (values of ±3e38) would give rstd 0 and finite zeros:
            // NaN instead, as torch's float computation gives, so the NaN guards see it.
            const float var = static_cast<float>(v / static_cast<double>(d));
            const float rs = std::isinf(var) ? std::numeric_limits<float>::quiet_NaN() : 1.f / std::sqrt(var + eps);
            for (std::size_t j = 0; j < d; ++j) {
                const float xh = (xr[j] - m) * rs;
                yr[j] = w ? xh * w[j] + (b ? b[j] : 0.f) : xh + (b ? b[j] : 0.f);
            }
            mean[r] = m;
            rstd[r] = rs;
        }
    });
}

namespace {
// dx of rows [r0, r1) (store: Assign or Add). Each row needs only its own sums, so row ranges
// run on different threads.
template <class Store>
void layer_norm_dx_rows(const float* g, const float* x, const float* w, const float* mean, const float* rstd, float* dx,
                        Store store, std::size_t r0, std::size_t r1, std::size_t d) {
    for (std::size_t r = r0; r < r1; ++r) {
        const float* gr = g + r * d;
        const float* xr = x + r * d;
        const float m = mean[r], rs = rstd[r];
        const auto dxhat = [gr, w](std::size_t j) { return gr[j] * (w ? w[j] : 1.f); };
        const double sum_dxh = sum8(d, [&](std::size_t j) { return static_cast<double>(dxhat(j)); });
        const double sum_dxh_xh = sum8(d, [&](std::size_t j) {
            const float xh = (xr[j] - m) * rs;
            return static_cast<double>(dxhat(j)) * xh;
        });
        const float a = static_cast<float>(sum_dxh / static_cast<double>(d));
        const float c = static_cast<float>(sum_dxh_xh / static_cast<double>(d));
        float* dxr = dx + r * d;
        for (std::size_t j = 0; j < d; ++j) {
            const float xh = (xr[j] - m) * rs;
            store(dxr[j], rs * (gr[j] * (w ? w[j] : 1.f) - a - xh * c));
        }
    }
}

// dw[j] += Σ_r g[r, j] xhat[r, j], db[j] += Σ_r g[r, j] for columns [j0, j1): sums over rows,
// so threads take column ranges; each column adds its rows in order 0, 1, ..., as one thread would.
void layer_norm_dw_columns(const float* g, const float* x, const float* mean, const float* rstd, float* dw, float* db,
                           std::size_t rows, std::size_t d, std::size_t j0, std::size_t j1) {
    for (std::size_t r = 0; r < rows; ++r) {
        const float* gr = g + r * d;
        const float* xr = x + r * d;
        const float m = mean[r], rs = rstd[r];
        if (dw)
            for (std::size_t j = j0; j < j1; ++j) dw[j] += gr[j] * ((xr[j] - m) * rs);
        if (db)
            for (std::size_t j = j0; j < j1; ++j) db[j] += gr[j];
    }
}
}  // namespace

// g, x, dx: (rows, d);  w, dw, db: (d);  mean, rstd: (rows)
void layer_norm_backward(const float* g, const float* x, const float* w, const float* mean, const float* rstd,
                         GradOut dx_out, GradOut dw_out, GradOut db_out, std::size_t rows, std::size_t d) {
    // dw and db are sums over rows (added into, zeroed first when fresh); dx is written per row.
    float* dw = dw_out ? dw_out.zeroed() : nullptr;
    float* db = db_out ? db_out.zeroed() : nullptr;
    if (dw || db)
        parallel_rows(d, rows, [&](std::size_t j0, std::size_t j1) { layer_norm_dw_columns(g, x, mean, rstd, dw, db, rows, d, j0, j1); });
    if (dx_out)
        dx_out.write([&](float* dx, auto store) {
            parallel_rows(rows, d, [&](std::size_t r0, std::size_t r1) { layer_norm_dx_rows(g, x, w, mean, rstd, dx, store, r0, r1, d); });
        });
}

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps) {
    detail::require_defined(x, "layer_norm", "the input");
    if (x.dim() == 0) fail("layer_norm: needs at least one dim, got a scalar");
    const std::size_t d = x.size(-1), rows = x.numel() / std::max<std::size_t>(d, 1);
    for (const Tensor* p : {&weight, &bias})
        if (p->defined() && p->shape() != Shape{d})
            fail("layer_norm: {} of shape {} does not fit normalized dim {} of input {}", p == &weight ? "weight" : "bias",
                 shape_str(p->shape()), d, shape_str(x.shape()));
    Array mean = empty_array({rows}), rstd = empty_array({rows});
    Array out = empty_array(x.shape());
    layer_norm_forward(x.ptr(), weight.defined() ? weight.ptr() : nullptr, bias.defined() ? bias.ptr() : nullptr,
                       out.data(), mean.data(), rstd.data(), rows, d, eps);
    // torch's NativeLayerNormBackward saves input, weight, mean and rstd (as result1, result2)
    std::vector<SavedRecord> saved{{"input", x}, {"mean", std::move(mean)}, {"rstd", std::move(rstd)}};
    if (weight.defined()) saved.push_back({"weight", weight});
    const bool affine = weight.defined();
    return make_result(std::move(out), "LayerNormBackward", {x, weight, bias}, std::move(saved),
                       [affine, rows, d](Node& self, const Array& g) {
                           const float* x = self.saved("input").data();
                           const float* w = affine ? self.saved("weight").data() : nullptr;
                           layer_norm_backward(g.data(), x, w, self.saved("mean").data(), self.saved("rstd").data(),
                                               self.grad_out(0, shape_of(g)), self.grad_out(1, {d}),
                                               self.grad_out(2, {d}), rows, d);
                       });
}

}  // namespace xtgrad
