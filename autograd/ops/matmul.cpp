// matmul and linear: every product is one cblas_sgemm on raw buffers (autograd/blas.cpp),
// with transposes passed as flags, never materialised. Gradients are written straight into
// the .grad buffers: beta = 0 for the first write into a fresh buffer, beta = 1 after.
#include "autograd/blas.hpp"
#include "autograd/ops.hpp"
#include "autograd/ops/saved.hpp"
#include "autograd/broadcast.hpp"

#include <algorithm>
#include <limits>

namespace xtgrad {
using detail::saved;
using detail::Saved;

namespace {

// For a batch dimension layout `batch` (broadcast result) and an operand's own batch dims,
// the operand's slice index for each output slice (stride 0 where the operand broadcasts).
std::vector<std::size_t> slice_offsets(const Shape& own, const Shape& batch) {
    const std::size_t n = batch.size(), lead = n - own.size();
    std::vector<std::size_t> stride(n, 0);
    for (std::size_t i = n, s = 1; i-- > lead;) {
        const std::size_t d = own[i - lead];
        stride[i] = d == 1 ? 0 : s;
        s *= d;
    }
    const std::size_t total = detail::prod(batch, 0, n);
    std::vector<std::size_t> off(total);
    std::vector<std::size_t> idx(n, 0);
    for (std::size_t c = 0; c < total; ++c) {
        std::size_t o = 0;
        for (std::size_t i = 0; i < n; ++i) o += idx[i] * stride[i];
        off[c] = o;
        for (std::size_t i = n; i-- > 0;) {  // odometer
            if (++idx[i] < batch[i]) break;
            idx[i] = 0;
        }
    }
    return off;
}

int to_int(std::size_t v, const char* op) {
    if (v > static_cast<std::size_t>(std::numeric_limits<int>::max())) fail("{}: dimension {} exceeds BLAS's int range", op, v);
    return static_cast<int>(v);
}

// dst slices written so far: the first product into a fresh gradient slice overwrites it.
struct SliceBeta {
    bool fresh;
    std::vector<bool> written;
    float operator()(std::size_t slice) {
        if (!fresh || written[slice]) return 1.f;
        written[slice] = true;
        return 0.f;
    }
};

}  // namespace

// a (..., M, K) @ b (..., K, N) -> (..., M, N)
Tensor matmul(const Tensor& a, const Tensor& b) {
    detail::require_defined(a, "matmul", "the first operand");
    detail::require_defined(b, "matmul", "the second operand");
    if (a.dim() == 1) return squeeze(matmul(unsqueeze(a, 0), b), -2);
    if (b.dim() == 1) return squeeze(matmul(a, unsqueeze(b, 1)), -1);
    if (a.dim() == 0 || b.dim() == 0) fail("matmul: operands must have at least 1 dim, got {} and {}", shape_str(a.shape()), shape_str(b.shape()));
    const Shape as = a.shape(), bs = b.shape();
    const std::size_t M = as[as.size() - 2], K = as.back(), K2 = bs[bs.size() - 2], N = bs.back();
    if (K != K2)
        fail("matmul: cannot multiply {} by {}: inner dimensions {} and {} differ", shape_str(as), shape_str(bs), K, K2);
    const Shape abatch(as.begin(), as.end() - 2), bbatch(bs.begin(), bs.end() - 2);
    const int m = to_int(M, "matmul"), n = to_int(N, "matmul"), k = to_int(K, "matmul");

    if (bbatch.empty()) {
        // x (..., M, K) @ W (K, N): fold the batch into M, one GEMM
        const std::size_t rows = detail::prod(as, 0, as.size() - 1);
        Shape out_shape = as;
        out_shape.back() = N;
        Array out = empty_array(out_shape);
        gemm(false, false, to_int(rows, "matmul"), n, k, 1.f, a.ptr(), b.ptr(), 0.f, out.data());
        return make_result(std::move(out), "MatmulBackward", {a, b},
                           [A = saved(a), B = saved(b), rows, m, n, k](Node& self, const Array& g) {
                               const int r = static_cast<int>(rows);
                               bool fresh;
                               if (self.needs_grad(0)) {  // dA (rows, K) = dC (rows, N) Bᵀ
                                   float* dA = self.grad_buffer(0, fresh);
                                   gemm(false, true, r, k, n, 1.f, g.data(), B->data(), fresh ? 0.f : 1.f, dA);
                               }
                               if (self.needs_grad(1)) {  // dB (K, N) = Aᵀ (K, rows) dC
                                   float* dB = self.grad_buffer(1, fresh);
                                   gemm(true, false, k, n, r, 1.f, A->data(), g.data(), fresh ? 0.f : 1.f, dB);
                               }
                               (void)m;
                           });
    }

    const Shape batch = broadcast_shapes(abatch, bbatch, "matmul (batch dims)");
    Shape out_shape = batch;
    out_shape.push_back(M);
    out_shape.push_back(N);
    const std::vector<std::size_t> aoff = slice_offsets(abatch, batch), boff = slice_offsets(bbatch, batch);
    Array out = empty_array(out_shape);
    for (std::size_t c = 0; c < aoff.size(); ++c)
        gemm(false, false, m, n, k, 1.f, a.ptr() + aoff[c] * M * K, b.ptr() + boff[c] * K * N, 0.f,
             out.data() + c * M * N);
    const std::size_t na = detail::prod(abatch, 0, abatch.size()), nb = detail::prod(bbatch, 0, bbatch.size());
    return make_result(std::move(out), "MatmulBackward", {a, b},
                       [A = saved(a), B = saved(b), aoff, boff, na, nb, m, n, k](Node& self, const Array& g) {
                           const std::size_t M = m, N = n, K = k;
                           bool fresh;
                           if (self.needs_grad(0)) {  // dA[c] += dC[c] B[c]ᵀ
                               float* dA = self.grad_buffer(0, fresh);
                               SliceBeta beta{fresh, std::vector<bool>(na, false)};
                               for (std::size_t c = 0; c < aoff.size(); ++c)
                                   gemm(false, true, m, k, n, 1.f, g.data() + c * M * N, B->data() + boff[c] * K * N,
                                        beta(aoff[c]), dA + aoff[c] * M * K);
                           }
                           if (self.needs_grad(1)) {  // dB[c] += A[c]ᵀ dC[c]
                               float* dB = self.grad_buffer(1, fresh);
                               SliceBeta beta{fresh, std::vector<bool>(nb, false)};
                               for (std::size_t c = 0; c < boff.size(); ++c)
                                   gemm(true, false, k, n, m, 1.f, A->data() + aoff[c] * M * K, g.data() + c * M * N,
                                        beta(boff[c]), dB + boff[c] * K * N);
                           }
                       });
}

// x (..., in) · weight (out, in)ᵀ + bias (out) -> (..., out)
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
    detail::require_defined(x, "linear", "the input");
    detail::require_defined(weight, "linear", "the weight");
    const Shape xs = x.shape(), ws = weight.shape();
    if (ws.size() != 2) fail("linear: weight must be 2-D (out, in), got {}", shape_str(ws));
    if (xs.empty() || xs.back() != ws[1])
        fail("linear: input {} does not fit weight {}: last dim {} but in_features {}", shape_str(xs), shape_str(ws),
             xs.empty() ? 0 : xs.back(), ws[1]);
    if (bias.defined() && (bias.dim() != 1 || bias.size(0) != ws[0]))
        fail("linear: bias {} does not fit weight {}: expected ({})", shape_str(bias.shape()), shape_str(ws), ws[0]);
    const std::size_t rows = detail::prod(xs, 0, xs.size() - 1), in = ws[1], outf = ws[0];
    Shape out_shape = xs;
    out_shape.back() = outf;
    Array out = empty_array(out_shape);
    const int r = to_int(rows, "linear"), ni = to_int(in, "linear"), no = to_int(outf, "linear");
    // y (rows, out) = x (rows, in) Wᵀ
    gemm(false, true, r, no, ni, 1.f, x.ptr(), weight.ptr(), 0.f, out.data());
    if (bias.defined()) {
        const float* bp = bias.ptr();
        float* y = out.data();
        for (std::size_t i = 0; i < rows; ++i, y += outf)
            for (std::size_t j = 0; j < outf; ++j) y[j] += bp[j];
    }
    std::vector<Tensor> inputs{x, weight};
    if (bias.defined()) inputs.push_back(bias);
    return make_result(std::move(out), "LinearBackward", inputs,
                       [X = saved(x), W = saved(weight), r, ni, no](Node& self, const Array& g) {
                           bool fresh;
                           if (self.needs_grad(0)) {  // dx (rows, in) = dy (rows, out) W (out, in)
                               float* dx = self.grad_buffer(0, fresh);
                               gemm(false, false, r, ni, no, 1.f, g.data(), W->data(), fresh ? 0.f : 1.f, dx);
                           }
                           if (self.needs_grad(1)) {  // dW (out, in) = dyᵀ (out, rows) x (rows, in)
                               float* dW = self.grad_buffer(1, fresh);
                               gemm(true, false, no, ni, r, 1.f, g.data(), X->data(), fresh ? 0.f : 1.f, dW);
                           }
                           if (self.needs_grad(2)) {  // db (out) = sum of dy over rows
                               float* db = self.grad_buffer(2, fresh);
                               if (fresh) std::fill(db, db + no, 0.f);
                               const float* gy = g.data();
                               for (int i = 0; i < r; ++i, gy += no)
                                   for (int j = 0; j < no; ++j) db[j] += gy[j];
                           }
                       });
}

}  // namespace xtgrad
