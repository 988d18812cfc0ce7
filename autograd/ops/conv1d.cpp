// conv1d (stride 1, zero padding) as GEMMs, per batch item:
//   x (B, Cin, L), weight (Cout, Cin, K), bias (Cout) -> y (B, Cout, Lout), Lout = L + 2p - K + 1
//   cols (Cin·K, Lout): cols[c·K + j, t] = xpad[c, t + j]      (im2col)
//   y[b] = W (Cout, Cin·K) · cols + bias
// For K = 1 and no padding, cols is x[b] itself: no copy, one GEMM per item, the same
// product as a Linear layer. Inside an autocast scope (autograd/autocast.hpp) every GEMM,
// forward and backward, takes bf16 operands.
#include <xtgrad/autograd/autocast.hpp>
#include <xtgrad/autograd/bf16_weights.hpp>
#include <xtgrad/autograd/gradient_consumer.hpp>
#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/autograd/grad.hpp>
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/autograd/ops/common.hpp>
#include <xtgrad/simd/vector_kernels.hpp>

#include <algorithm>
#include <limits>

namespace xtgrad {

namespace {
struct ConvDims {
    std::size_t B, Cin, L, Cout, K, pad, Lout;
    bool direct() const { return K == 1 && pad == 0; }  // cols == x[b]
};

// cols (Cin·K, Lout) of one batch item x (Cin, L)
void im2col(const float* x, float* cols, const ConvDims& d) {
    for (std::size_t c = 0; c < d.Cin; ++c)
        for (std::size_t j = 0; j < d.K; ++j) {
            float* row = cols + (c * d.K + j) * d.Lout;
            for (std::size_t t = 0; t < d.Lout; ++t) {
                const long src = static_cast<long>(t + j) - static_cast<long>(d.pad);
                row[t] = (src >= 0 && src < static_cast<long>(d.L)) ? x[c * d.L + static_cast<std::size_t>(src)] : 0.f;
            }
        }
}

// the adjoint: dx (Cin, L) += scatter of dcols (Cin·K, Lout)
void col2im_add(const float* dcols, float* dx, const ConvDims& d) {
    for (std::size_t c = 0; c < d.Cin; ++c)
        for (std::size_t j = 0; j < d.K; ++j) {
            const float* row = dcols + (c * d.K + j) * d.Lout;
            for (std::size_t t = 0; t < d.Lout; ++t) {
                const long src = static_cast<long>(t + j) - static_cast<long>(d.pad);
                if (src >= 0 && src < static_cast<long>(d.L)) dx[c * d.L + static_cast<std::size_t>(src)] += row[t];
            }
        }
}
}  // namespace

namespace {
// The backward in ops: y = Σ_j W[:, :, j] · x_padded[:, :, j : j + Lout] recomputed with cat, narrow
// and matmul, and that graph's partials in x and W; the bias's gradient is g summed over batch
// and length.
Node::DifferentiableFn conv1d_in_ops(const ConvDims& d) {
    return [d](const Node& self, const Tensor& g) -> Grads {
        const Tensor x = self.saved_tensor("input"), w = self.saved_tensor("weight");
        Tensor padded = x;
        if (d.pad > 0) {
            const Tensor zeros = Tensor::zeros({d.B, d.Cin, d.pad});
            padded = cat({zeros, x, zeros}, 2);
        }
        Tensor y;
        for (std::size_t j = 0; j < d.K; ++j) {
            const Tensor wj = reshape(narrow(w, 2, j, 1), {static_cast<long>(d.Cout), static_cast<long>(d.Cin)});
            const Tensor term = matmul(wj, narrow(padded, 2, j, d.Lout));
            y = y.defined() ? add(y, term) : term;
        }
        Grads out = detail::partials(y, {x, w}, g);
        if (self.inputs().size() > 2) out.push_back(self.needs_grad(2) ? sum(g, {0, 2}) : Tensor());
        return out;
    };
}
}  // namespace

Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, std::size_t padding) {
    detail::require_defined(x, "conv1d", "the input");
    detail::require_defined(weight, "conv1d", "the weight");
    if (x.dim() != 3) fail("conv1d: input must be 3-D (batch, channels, length), got {}", shape_str(x.shape()));
    if (weight.dim() != 3) fail("conv1d: weight must be 3-D (out_channels, in_channels, kernel), got {}", shape_str(weight.shape()));
    const ConvDims d{x.size(0), x.size(1), x.size(2), weight.size(0), weight.size(2), padding, 0};
    if (weight.size(1) != d.Cin)
        fail("conv1d: input {} has {} channels but weight {} expects {}", shape_str(x.shape()), d.Cin,
             shape_str(weight.shape()), weight.size(1));
    // The products take int sizes: the padded length and a column's Cin·K must fit one (and
    // L + 2·padding must not wrap a size_t into a short, wrong output).
    constexpr std::size_t kMaxDim = std::numeric_limits<int>::max();
    if (padding > kMaxDim / 2 || d.L > kMaxDim - 2 * padding || d.Cout > kMaxDim || d.Cin > kMaxDim / std::max<std::size_t>(d.K, 1))
        fail("conv1d: sizes too large for the products (at most {} each): input {}, weight {}, padding {}", kMaxDim,
             shape_str(x.shape()), shape_str(weight.shape()), padding);
    if (d.K == 0) fail("conv1d: kernel size must be positive, got weight {}", shape_str(weight.shape()));
    if (d.L + 2 * padding < d.K)
        fail("conv1d: kernel size {} is longer than the padded input length {} (input {})", d.K, d.L + 2 * padding,
             shape_str(x.shape()));
    if (bias.defined() && (bias.dim() != 1 || bias.size(0) != d.Cout))
        fail("conv1d: bias {} does not fit {} output channels", shape_str(bias.shape()), d.Cout);
    ConvDims dims = d;
    const DType p = autocast::dtype();  // bf16 operands inside an autocast scope, for backward too
    dims.Lout = d.L + 2 * padding - d.K + 1;
    const int M = static_cast<int>(dims.Cout), N = static_cast<int>(dims.Lout), Kc = static_cast<int>(dims.Cin * dims.K);
    // One bf16 copy of W (Cout, Cin·K) per version serves every batch element's product, forward
    // (W · cols) and backward (dcols = Wᵀ · dy, W transposed by flag: the same stored order); none
    // when the products run in fp32 anyway (a short sequence: bf16_product_in_fp32).
    const autocast::Bf16Copy w16 =
        p == DType::bf16 && !bf16_product_in_fp32(M, N, Kc) ? autocast::bf16_weight(weight) : nullptr;
    const std::uint16_t* w16_data = w16 ? w16->data() : nullptr;

    Array out = empty_array({dims.B, dims.Cout, dims.Lout});
    std::vector<float> cols(dims.direct() ? 0 : dims.Cin * dims.K * dims.Lout);
    for (std::size_t b = 0; b < dims.B; ++b) {
        const float* xb = x.ptr() + b * dims.Cin * dims.L;
        if (!dims.direct()) im2col(xb, cols.data(), dims);
        float* yb = out.data() + b * dims.Cout * dims.Lout;
        gemm(p, false, false, M, N, Kc, 1.f, weight.ptr(), w16_data, dims.direct() ? xb : cols.data(), nullptr, 0.f, yb);
        if (bias.defined())
            for (std::size_t o = 0; o < dims.Cout; ++o)
                std::for_each(yb + o * dims.Lout, yb + (o + 1) * dims.Lout, [v = bias.ptr()[o]](float& y) { y += v; });
    }
    std::vector<Tensor> inputs{x, weight};
    if (bias.defined()) inputs.push_back(bias);
    return detail::with_jvp(differentiable(make_result(std::move(out), "Conv1dBackward", inputs, {{"input", x}, {"weight", weight}},
                       [dims, M, N, Kc, p, w16](Node& self, const Array& g) {
                           std::vector<float> cols(dims.direct() ? 0 : dims.Cin * dims.K * dims.Lout);
                           std::vector<float> dcols(dims.direct() ? 0 : cols.size());
                           const float* x = self.saved("input").data();
                           const float* w = self.saved("weight").data();
                           GradOut dx_out = self.grad_out(0, {dims.B, dims.Cin, dims.L});
                           // With one batch item and kernel 1 the weight gradient is one fp32 product,
                           // which may go straight to the optimizer's step in backward, proven finite
                           // from dy and x (autograd/gradient_consumer.hpp): after the loop, as dx
                           // reads the weight that step updates.
                           const Shape w_shape{dims.Cout, dims.Cin, dims.K};
                           const bool may_hand_over = dims.B == 1 && dims.direct() && p == DType::fp32 &&
                                                      self.grad_consumer(1) != nullptr;
                           GradOut dw_out = may_hand_over ? GradOut() : self.grad_out(1, w_shape);
                           // col2im and the bias sum add into their buffers (zeroed when fresh);
                           // the GEMMs overwrite a fresh buffer with beta 0
                           float* dx = !dx_out ? nullptr : dims.direct() ? dx_out.data() : dx_out.zeroed();
                           float* dw = dw_out && dims.B == 0 ? dw_out.zeroed() : dw_out.data();  // no GEMM runs
                           GradOut db_out = self.grad_out(2, {dims.Cout});
                           float* db = db_out ? db_out.zeroed() : nullptr;
                           for (std::size_t b = 0; b < dims.B; ++b) {
                               const float* xb = x + b * dims.Cin * dims.L;
                               const float* gb = g.data() + b * dims.Cout * dims.Lout;
                               if (dw) {  // dW (Cout, Cin·K) += dy[b] (Cout, Lout) · colsᵀ
                                   if (!dims.direct()) im2col(xb, cols.data(), dims);
                                   gemm(p, false, true, M, Kc, N, 1.f, gb, dims.direct() ? xb : cols.data(),
                                        b == 0 ? dw_out.beta() : 1.f, dw);
                               }
                               if (dx) {  // dcols (Cin·K, Lout) = Wᵀ · dy[b]
                                   float* dxb = dx + b * dims.Cin * dims.L;
                                   const std::uint16_t* w16_data = w16 ? w16->data() : nullptr;
                                   if (dims.direct()) {
                                       gemm(p, true, false, Kc, N, M, 1.f, w, w16_data, gb, nullptr, dx_out.beta(), dxb);
                                   } else {
                                       gemm(p, true, false, Kc, N, M, 1.f, w, w16_data, gb, nullptr, 0.f, dcols.data());
                                       col2im_add(dcols.data(), dxb, dims);
                                   }
                               }
                               if (db)
                                   for (std::size_t o = 0; o < dims.Cout; ++o)
                                       for (std::size_t t = 0; t < dims.Lout; ++t) db[o] += gb[o * dims.Lout + t];
                           }
                           // dW (Cout, Cin) = dy[0] (Cout, Lout) · x[0]ᵀ, handed over or, if declined, stored
                           if (may_hand_over) {
                               const auto dW_product = [&](float* out) { gemm(false, true, M, Kc, N, 1.f, g.data(), x, 0.f, out); };
                               const auto dW_finite = [&] {
                                   return detail::product_provably_finite(
                                       g.data(), g.size(), x, static_cast<std::size_t>(Kc) * static_cast<std::size_t>(N), N,
                                       static_cast<std::size_t>(M) * static_cast<std::size_t>(Kc));
                               };
                               // dW[o][i] = Σ_t dy[0][o][t] · x[0][i][t]: the product's factors, in place
                               const vec::RankKGradient factors{.rows = dims.Cout, .cols = static_cast<std::size_t>(Kc), .rank = N,
                                                                .a = g.data(), .a_row = N, .a_rank = 1,
                                                                .b = x, .b_rank = 1, .b_col = N};
                               if (!give_gradient_to_consumer(self, 1, w_shape, dW_finite, dW_product, &factors)) {
                                   const GradOut late = self.grad_out(1, w_shape);
                                   gemm(false, true, M, Kc, N, 1.f, g.data(), x, late.beta(), late.data());
                               }
                           }
                       }),
                       conv1d_in_ops(dims)),
        // jvp: bilinear in (x, W), plus the bias's tangent along the channels
        {&x, &weight, &bias}, [&](const detail::Tangents& t) {
            Tensor out = t.has(0) ? conv1d(t[0], weight, Tensor(), padding) : Tensor();
            if (t.has(1)) out = detail::add_terms(out, conv1d(x, t[1], Tensor(), padding));
            if (t.has(2)) out = detail::add_terms(out, reshape(t[2], {1, static_cast<long>(dims.Cout), 1}));
            return out;
        });
}

}  // namespace xtgrad
