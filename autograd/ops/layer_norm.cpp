// layer_norm over the last dim, fused forward and backward row kernels (torch's LayerNorm:
// biased variance, eps inside the square root).
//   x (R, d) rows;  mean_r, rstd_r = 1 / sqrt(var_r + eps);  xhat = (x - mean) rstd
//   y = xhat * weight + bias
// Backward (docs/derivations.md#layernorm), per row with dxhat = g * weight:
//   dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
//   dweight += Σ_rows g * xhat;  dbias += Σ_rows g
#include <xtgrad/autograd/ops/layer_norm.hpp>
#include <xtgrad/autograd/grad.hpp>
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/autograd/ops/common.hpp>
#include <xtgrad/autograd/reduce_kernels.hpp>
#include <xtgrad/autograd/speed_switches.hpp>
#include <xtgrad/threads/parallel.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>

namespace xtgrad {

namespace {
// Σ_j term(j)[q] for j in [0, n) and each of the K sums q, in double, as 8 interleaved partial
// sums (lane k takes j ≡ k mod 8) added pairwise at the end. One running double sum is a chain of
// dependent adds (~4 cycles per element: layer norm ran at ~1.7 ns per element, 5 % of seed-d's
// bf16 step); 8 independent lanes vectorise, and K sums share one pass over the row (backward's
// two sums in two passes, with a branch on a null weight inside, took 3.4x the time). The order
// is fixed, so every thread count gives the same bits.
template <std::size_t K, class Term>
std::array<double, K> sums8(std::size_t n, Term term) {
    // lanes 0-3 and 4-7 of each sum as two vectors of 4 doubles: GCC kept double acc[K][8] on the
    // stack and every loop scalar (it vectorised only where it knew n)
    using Lanes = double __attribute__((vector_size(32)));
    Lanes lo[K] = {}, hi[K] = {};
    std::size_t j = 0;
    for (; j + 8 <= n; j += 8) {
        std::array<double, K> t[8];
        for (std::size_t k = 0; k < 8; ++k) t[k] = term(j + k);
        for (std::size_t q = 0; q < K; ++q) {
            lo[q] += Lanes{t[0][q], t[1][q], t[2][q], t[3][q]};
            hi[q] += Lanes{t[4][q], t[5][q], t[6][q], t[7][q]};
        }
    }
    // the last n mod 8 terms, to lanes 0.. as above
    for (std::size_t k = 0; j + k < n; ++k) {
        const std::array<double, K> t = term(j + k);
        for (std::size_t q = 0; q < K; ++q) {
            if (k < 4) lo[q][k] += t[q];
            else hi[q][k - 4] += t[q];  // not one ?: lvalue: Clang takes no vector element as one
        }
    }
    std::array<double, K> sum;
    for (std::size_t q = 0; q < K; ++q)
        sum[q] = ((lo[q][0] + lo[q][1]) + (lo[q][2] + lo[q][3])) + ((hi[q][0] + hi[q][1]) + (hi[q][2] + hi[q][3]));
    return sum;
}

// yr = (xr - m) rs · w + b over one row of d: the forward's, and the same bits when backward
// makes the output again from the saved mean and rstd
void normalize_row(const float* xr, const float* w, const float* b, float m, float rs, float* yr, std::size_t d) {
    for (std::size_t j = 0; j < d; ++j) {
        const float xh = (xr[j] - m) * rs;
        yr[j] = w ? xh * w[j] + (b ? b[j] : 0.f) : xh + (b ? b[j] : 0.f);
    }
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
            const double s = sums8<1>(d, [xr](std::size_t j) { return std::array{static_cast<double>(xr[j])}; })[0];
            const float m = static_cast<float>(s / static_cast<double>(d));
            const double v = sums8<1>(d, [xr, m](std::size_t j) {
                const float c = xr[j] - m;  // centred in float, squared in double
                return std::array{static_cast<double>(c) * c};
            })[0];
            // A variance past float's range (values of ±3e38) would give rstd 0 and finite zeros:
            // NaN instead, as torch's float computation gives, so the NaN guards see it.
            const float var = static_cast<float>(v / static_cast<double>(d));
            const float rs = std::isinf(var) ? std::numeric_limits<float>::quiet_NaN() : 1.f / std::sqrt(var + eps);
            normalize_row(xr, w, b, m, rs, yr, d);
            mean[r] = m;
            rstd[r] = rs;
        }
    });
}

void layer_norm_apply(const float* x, const float* w, const float* b, const float* mean, const float* rstd, float* y,
                      std::size_t rows, std::size_t d) {
    parallel_rows(rows, d, [&](std::size_t r0, std::size_t r1) {
        for (std::size_t r = r0; r < r1; ++r) normalize_row(x + r * d, w, b, mean[r], rstd[r], y + r * d, d);
    });
}

namespace {
// Rows per block of the weight and bias gradients' partial sums. Fixed, not per thread: each
// block sums its rows in order, then the blocks are added in order, so the gradients have the
// same bits for any thread count.
constexpr std::size_t kGradRowBlock = 64;

// One pass over rows [r0, r1) (one block): dx of each row (store: Assign or Add; dx null: not
// wanted) and the block's sums dw_part[j] = Σ_r g[r, j] xhat[r, j], db_part[j] = Σ_r g[r, j]
// (null: not wanted). The row's g and x are read from memory once; the row's three loops find
// them in L1, and the block's sums stay there too.
template <bool HasWeight, class Store>
void layer_norm_backward_rows(const float* g, const float* x, const float* w, const float* mean, const float* rstd,
                              float* dx, Store store, float* dw_part, float* db_part, std::size_t r0, std::size_t r1,
                              std::size_t d) {
    for (std::size_t r = r0; r < r1; ++r) {
        const float* __restrict gr = g + r * d;
        const float* __restrict xr = x + r * d;
        const float m = mean[r], rs = rstd[r];
        if (dx) {
            const auto dxhat = [gr, w](std::size_t j) { return HasWeight ? gr[j] * w[j] : gr[j]; };
            // Σ dxhat and Σ dxhat · xhat, in one pass
            const auto [sum_dxh, sum_dxh_xh] = sums8<2>(d, [&](std::size_t j) {
                const float dxh = dxhat(j), xh = (xr[j] - m) * rs;
                return std::array{static_cast<double>(dxh), static_cast<double>(dxh) * xh};
            });
            const float a = static_cast<float>(sum_dxh / static_cast<double>(d));
            const float c = static_cast<float>(sum_dxh_xh / static_cast<double>(d));
            float* __restrict dxr = dx + r * d;
            for (std::size_t j = 0; j < d; ++j) {
                const float xh = (xr[j] - m) * rs;
                store(dxr[j], rs * (dxhat(j) - a - xh * c));
            }
        }
        const bool first = r == r0;
        if (dw_part)
            for (std::size_t j = 0; j < d; ++j) {
                const float term = gr[j] * ((xr[j] - m) * rs);
                dw_part[j] = first ? term : dw_part[j] + term;
            }
        if (db_part)
            for (std::size_t j = 0; j < d; ++j) db_part[j] = first ? gr[j] : db_part[j] + gr[j];
    }
}
}  // namespace

// g, x, dx: (rows, d);  w, dw, db: (d);  mean, rstd: (rows)
// Row blocks of kGradRowBlock rows run on the pool: each writes its rows' dx and its own partial
// sums of dw and db (part: (blocks, d) each); then the partial sums are added, block after
// block, into dw and db (a running sum, zeroed first when fresh).
void layer_norm_backward(const float* g, const float* x, const float* w, const float* mean, const float* rstd,
                         GradOut dx_out, GradOut dw_out, GradOut db_out, std::size_t rows, std::size_t d) {
    if (!dx_out && !dw_out && !db_out) return;
    const std::size_t blocks = (rows + kGradRowBlock - 1) / kGradRowBlock;
    Array dw_part = empty_array({dw_out ? blocks : 0, d}), db_part = empty_array({db_out ? blocks : 0, d});
    const auto run = [&](float* dx, auto store) {
        parallel_rows(blocks, kGradRowBlock * d, [&](std::size_t b0, std::size_t b1) {
            for (std::size_t b = b0; b < b1; ++b) {
                // the weight's presence a template argument: a branch on it per element kept the loops scalar
                const auto rows_of = w ? layer_norm_backward_rows<true, decltype(store)>
                                       : layer_norm_backward_rows<false, decltype(store)>;
                rows_of(g, x, w, mean, rstd, dx, store, dw_out ? dw_part.data() + b * d : nullptr,
                        db_out ? db_part.data() + b * d : nullptr, b * kGradRowBlock,
                        std::min(rows, (b + 1) * kGradRowBlock), d);
            }
        });
    };
    if (dx_out)
        dx_out.write(run);
    else
        run(nullptr, Assign{});
    for (auto [out, part] : {std::pair{&dw_out, &dw_part}, std::pair{&db_out, &db_part}}) {
        if (!*out) continue;
        add_column_sums(part->data(), blocks, d, 0, d, out->zeroed());  // block after block
    }
}

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps) {
    detail::require_defined(x, "layer_norm", "the input");
    if (x.dim() == 0) fail("layer_norm: needs at least one dim, got a scalar");
    if (!(eps >= 0.f && std::isfinite(eps))) fail("layer_norm: eps must be a finite number >= 0, got {}", eps);
    const std::size_t d = x.size(-1), rows = x.numel() / std::max<std::size_t>(d, 1);
    for (const Tensor* p : {&weight, &bias})
        if (p->defined() && p->shape() != Shape{d})
            fail("layer_norm: {} of shape {} does not fit normalized dim {} of input {}", p == &weight ? "weight" : "bias",
                 shape_str(p->shape()), d, shape_str(x.shape()));
    Array mean = empty_array({rows}), rstd = empty_array({rows});
    Array out = empty_array(x.shape());
    layer_norm_forward(x.ptr(), weight.defined() ? weight.ptr() : nullptr, bias.defined() ? bias.ptr() : nullptr,
                       out.data(), mean.data(), rstd.data(), rows, d, eps);
    // torch's NativeLayerNormBackward saves input, weight, mean and rstd (as result1, result2),
    // and bias, which only remaking the output reads (as torch's, which saves it too)
    std::vector<SavedRecord> saved{{"input", x}, {"mean", std::move(mean)}, {"rstd", std::move(rstd)}};
    if (weight.defined()) saved.push_back({"weight", weight});
    if (bias.defined()) saved.push_back({"bias", bias});
    const bool affine = weight.defined();
    Tensor y = detail::with_jvp(differentiable(
        make_result(std::move(out), "LayerNormBackward", {x, weight, bias}, std::move(saved),
                    [affine, has_bias = bias.defined(), rows, d](Node& self, const Array& g) {
                        // the bias is read only to make the output again, but a write in place
                        // since throws here too, as with torch's saved bias
                        if (has_bias) (void)self.saved("bias");
                        const float* x = self.saved("input").data();
                        const float* w = affine ? self.saved("weight").data() : nullptr;
                        layer_norm_backward(g.data(), x, w, self.saved("mean").data(), self.saved("rstd").data(),
                                            self.grad_out(0, shape_of(g)), self.grad_out(1, {d}),
                                            self.grad_out(2, {d}), rows, d);
                    }),
        // in ops: the forward recomputed from mean, var and pow on the saved input and weight, and
        // that graph's partials (the bias's gradient is g itself, summed back by the engine)
        [affine, eps](const Node& self, const Tensor& g) -> Grads {
            const Tensor x = self.saved_tensor("input");
            const Tensor w = affine ? self.saved_tensor("weight") : Tensor();
            const Tensor xhat = mul(sub(x, xtgrad::mean(x, {-1}, true)), pow(add(var(x, {-1}, false, true), eps), -0.5f));
            Grads out = detail::partials(affine ? mul(xhat, w) : xhat, {x, w}, g);
            out.push_back(self.needs_grad(2) ? g : Tensor());
            return out;
        }),
        // jvp, from primitives over the last dim, x̂ = (x - mean) · rstd:
        //   dx̂ = rstd (tx - mean(tx) - x̂ mean(x̂ tx)),  dy = dx̂ w + x̂ tw + tb
        {&x, &weight, &bias}, [&](const detail::Tangents& t) {
            const Tensor rstd = pow(add(var(x, {-1}, false, true), eps), -0.5f);
            const Tensor xhat = mul(sub(x, xtgrad::mean(x, {-1}, true)), rstd);
            Tensor out;
            if (t.has(0)) {
                const Tensor tx = t[0];
                const Tensor dxhat =
                    mul(rstd, sub(sub(tx, xtgrad::mean(tx, {-1}, true)), mul(xhat, xtgrad::mean(mul(xhat, tx), {-1}, true))));
                out = affine ? mul(dxhat, weight) : dxhat;
            }
            if (t.has(1)) out = detail::add_terms(out, mul(xhat, t[1]));
            return detail::add_terms(out, t[2]);
        });
    // its output made again from the node's records when a backward reads it (autograd/recompute.hpp);
    // the recipe holds the node weakly, so a kept output keeps nothing else alive
    if (y.grad_fn() && detail::speed_switch_on(detail::kLayerNormRecomputeSwitch))
        detail::set_recompute(y, "layer_norm", detail::kLayerNormRecomputeSwitch.name,
                              [node = std::weak_ptr<const Node>(y.grad_fn()), affine, has_bias = bias.defined(),
                               shape = y.shape(), rows, d] {
            const std::shared_ptr<const Node> ln = node.lock();
            if (!ln) fail("layer_norm: the node that made this output is gone");
            const float* x = ln->saved("input").data();  // as its backward reads them, version checked
            Array out = empty_array(shape);
            layer_norm_apply(x, affine ? ln->saved("weight").data() : nullptr, has_bias ? ln->saved("bias").data() : nullptr,
                             ln->saved("mean").data(), ln->saved("rstd").data(), out.data(), rows, d);
            return out;
        });
    return y;
}

}  // namespace xtgrad
