// matmul, matmul_nt and linear: every product is one GEMM on raw buffers through gemm/blas.cpp
// (oneDNN or OpenBLAS), with transposes passed as flags, never materialised. Inside an
// autocast scope (autograd/autocast.hpp) the forward's and the backward's GEMMs take bf16
// operands: the node keeps the precision it was created with. Gradients are
// written straight into the gradient buffers (GradOut, autograd/node.hpp): beta = 0 for
// the first write into a fresh buffer, beta = 1 after. Batched products with many slices run
// on xtgrad's threads (for_each_slice).
#include <xtgrad/autograd/autocast.hpp>
#include <xtgrad/autograd/bf16_weights.hpp>
#include <xtgrad/autograd/gradient_consumer.hpp>
#include <xtgrad/autograd/grad_mode.hpp>
#include <xtgrad/autograd/packed_weights.hpp>
#include <xtgrad/autograd/reduce_kernels.hpp>
#include <xtgrad/autograd/transposed_weights.hpp>
#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/autograd/ops/common.hpp>
#include <xtgrad/autograd/broadcast.hpp>
#include <xtgrad/simd/vector_kernels.hpp>
#include <xtgrad/threads/parallel.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <vector>

namespace xtgrad {

namespace {

// For a batch dimension layout `batch` (broadcast result) and an operand's own batch dims,
// the operand's slice index for each output slice (stride 0 where the operand broadcasts).
std::vector<std::size_t> slice_offsets(const Shape& own, const Shape& batch) {
    return strided_offsets(batch, batch.size(), broadcast_strides(own, batch.size()), "matmul (batch dims)");
}

// The beta of each product c writing slice off[c] of a gradient with `slices` slices: the
// first product into a slice of a fresh buffer overwrites it (0), every other adds (1). A slice
// no product writes (a broadcast operand against an empty batch) is zeroed here.
std::vector<float> slice_betas(GradOut& d, const std::vector<std::size_t>& off, std::size_t slices,
                               std::size_t slice_size) {
    std::vector<float> betas(off.size(), 1.f);
    if (!d.fresh()) return betas;
    std::vector<bool> written(slices, false);
    for (std::size_t c = 0; c < off.size(); ++c)
        if (!written[off[c]]) {
            written[off[c]] = true;
            betas[c] = 0.f;
        }
    for (std::size_t s = 0; s < slices; ++s)
        if (!written[s]) std::fill(d.data() + s * slice_size, d.data() + (s + 1) * slice_size, 0.f);
    return betas;
}

// The product behind matmul and matmul_nt, for every slice c of the broadcast batch:
//   C[c] (M, N) = alpha · A[c] (M, K) · op(B[c])      op(B) = B (K, N), or Bᵀ for B (N, K)
// backward:
//   dA[c] (M, K) += alpha · dC[c] · op(B[c])ᵀ         (dC B: NN for b_t, dC Bᵀ: NT otherwise)
//   dB[c]        += alpha · Aᵀ dC[c] (K, N), or alpha · dC[c]ᵀ A[c] (N, K) for b_t
// Transposes are GEMM flags; nothing is copied. A 2-D B with a batched A folds A's batch
// into the rows: one GEMM of (rows, K) by op(B).
// The product's backward in ops (the formulas above; a broadcast batch is summed back by the engine)
Node::DifferentiableFn product_in_ops(bool b_t, float alpha) {
    return [b_t, alpha](const Node& self, const Tensor& g) -> Grads {
        const auto scaled = [alpha](Tensor t) { return alpha == 1.f ? t : mul(t, alpha); };
        const Tensor a = self.saved_tensor("self"), b = self.saved_tensor("mat2");
        Tensor da, db;
        if (self.needs_grad(0)) da = b_t ? matmul(g, b) : matmul_nt(g, b);                       // dC op(B)ᵀ
        if (self.needs_grad(1)) db = b_t ? matmul(transpose(g, -2, -1), a) : matmul(transpose(a, -2, -1), g);
        return {da.defined() ? scaled(da) : da, db.defined() ? scaled(db) : db};
    };
}

Tensor product_value(const Tensor& a, const Tensor& b, bool b_t, float alpha, const char* op) {
    const Shape as = a.shape(), bs = b.shape();
    const std::size_t M = as[as.size() - 2], K = as.back();
    const std::size_t Kb = b_t ? bs.back() : bs[bs.size() - 2], N = b_t ? bs[bs.size() - 2] : bs.back();
    if (K != Kb)
        fail("{}: cannot multiply {} by {}{}: inner dimensions {} and {} differ", op, shape_str(as),
             b_t ? "the transpose of " : "", shape_str(bs), K, Kb);
    const Shape abatch(as.begin(), as.end() - 2), bbatch(bs.begin(), bs.end() - 2);
    const int m = detail::to_blas_int(M, op), n = detail::to_blas_int(N, op), k = detail::to_blas_int(K, op);
    const char* node = b_t ? "MatmulNtBackward" : "MatmulBackward";
    const DType p = autocast::dtype();  // bf16 operands inside an autocast scope, for backward too

    if (bbatch.empty()) {
        // x (..., M, K) · op(W): fold the batch into M, one GEMM
        const int rows = detail::to_blas_int(detail::prod(as, 0, as.size() - 1), op);
        Shape out_shape = as;
        out_shape.back() = N;
        Array out = empty_array(out_shape);
        gemm(p, false, b_t, rows, n, k, alpha, a.ptr(), b.ptr(), 0.f, out.data());
        return differentiable(make_result(std::move(out), node, {a, b}, {{"self", a}, {"mat2", b}},
                           [as, bs, rows, n, k, b_t, alpha, p](Node& self, const Array& g) {
                               if (GradOut dA = self.grad_out(0, as)) {  // dA (rows, K) = alpha · dC (rows, N) op(B)ᵀ
                                   const float* Bp = self.saved("mat2").data();
                                   gemm(p, false, !b_t, rows, k, n, alpha, g.data(), Bp, dA.beta(), dA.data());
                               }
                               if (GradOut dB = self.grad_out(1, bs)) {
                                   const float* Ap = self.saved("self").data();
                                   if (b_t)  // dB (N, K) = alpha · dCᵀ (N, rows) A (rows, K)
                                       gemm(p, true, false, n, k, rows, alpha, g.data(), Ap, dB.beta(), dB.data());
                                   else      // dB (K, N) = alpha · Aᵀ (K, rows) dC (rows, N)
                                       gemm(p, true, false, k, n, rows, alpha, Ap, g.data(), dB.beta(), dB.data());
                               }
                           }),
                           product_in_ops(b_t, alpha));
    }

    const Shape batch = broadcast_shapes(abatch, bbatch, b_t ? "matmul_nt (batch dims)" : "matmul (batch dims)");
    Shape out_shape = batch;
    out_shape.push_back(M);
    out_shape.push_back(N);
    const std::vector<std::size_t> aoff = slice_offsets(abatch, batch), boff = slice_offsets(bbatch, batch);
    const std::size_t count = aoff.size();
    const double flops = 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
    Array out = empty_array(out_shape);
    {
        const float *A = a.ptr(), *B = b.ptr();
        float* C = out.data();
        for_each_slice(count, flops, true, [&](std::size_t c) {
            gemm(p, false, b_t, m, n, k, alpha, A + aoff[c] * M * K, B + boff[c] * K * N, 0.f, C + c * M * N);
        });
    }
    const std::size_t na = detail::prod(abatch, 0, abatch.size()), nb = detail::prod(bbatch, 0, bbatch.size());
    return differentiable(make_result(
        std::move(out), node, {a, b}, {{"self", a}, {"mat2", b}},
        [as, bs, aoff, boff, na, nb, m, n, k, b_t, alpha, flops, p](Node& self, const Array& g) {
            const std::size_t M = m, N = n, K = k, count = aoff.size();
            if (GradOut dA_out = self.grad_out(0, as)) {  // dA[c] (M, K) += alpha · dC[c] (M, N) op(B[c])ᵀ
                const float* Bp = self.saved("mat2").data();  // read here: a stale Saved throws on this thread
                const std::vector<float> betas = slice_betas(dA_out, aoff, na, M * K);
                const bool independent = na == count;  // else A is broadcast: slices share dA
                float* dA = dA_out.data();
                for_each_slice(count, flops, independent, [&](std::size_t c) {
                    gemm(p, false, !b_t, m, k, n, alpha, g.data() + c * M * N, Bp + boff[c] * K * N, betas[c],
                         dA + aoff[c] * M * K);
                });
            }
            if (GradOut dB_out = self.grad_out(1, bs)) {
                const std::vector<float> betas = slice_betas(dB_out, boff, nb, K * N);
                const bool independent = nb == count;
                float* dB = dB_out.data();
                const float* Ap = self.saved("self").data();
                for_each_slice(count, flops, independent, [&](std::size_t c) {
                    if (b_t)  // dB[c] (N, K) += alpha · dC[c]ᵀ (N, M) A[c] (M, K)
                        gemm(p, true, false, n, k, m, alpha, g.data() + c * M * N, Ap + aoff[c] * M * K, betas[c],
                             dB + boff[c] * K * N);
                    else      // dB[c] (K, N) += alpha · A[c]ᵀ (K, M) dC[c] (M, N)
                        gemm(p, true, false, k, n, m, alpha, Ap + aoff[c] * M * K, g.data() + c * M * N, betas[c],
                             dB + boff[c] * K * N);
                });
            }
        }),
        product_in_ops(b_t, alpha));
}

// jvp: alpha · (tA op(B) + A op(tB)), the product being bilinear
Tensor product(const Tensor& a, const Tensor& b, bool b_t, float alpha, const char* op) {
    return detail::with_jvp(product_value(a, b, b_t, alpha, op), {&a, &b}, [&](const detail::Tangents& t) {
        return detail::add_terms(t.has(0) ? product_value(t[0], b, b_t, alpha, op) : Tensor(),
                                 t.has(1) ? product_value(a, t[1], b_t, alpha, op) : Tensor());
    });
}

}  // namespace

// a (..., M, K) @ b (..., K, N) -> (..., M, N)
Tensor matmul(const Tensor& a, const Tensor& b) {
    detail::require_defined(a, "matmul", "the first operand");
    detail::require_defined(b, "matmul", "the second operand");
    if (a.dim() == 0 || b.dim() == 0) fail("matmul: operands must have at least 1 dim, got {} and {}", shape_str(a.shape()), shape_str(b.shape()));
    // torch's 1-D rules: a vector is a row on the left, a column on the right; both: the dot product (0-d)
    if (a.dim() == 1 && b.dim() == 1) return squeeze(squeeze(matmul(unsqueeze(a, 0), unsqueeze(b, 1)), -1), -1);
    if (a.dim() == 1) return squeeze(matmul(unsqueeze(a, 0), b), -2);
    if (b.dim() == 1) return squeeze(matmul(a, unsqueeze(b, 1)), -1);
    return product(a, b, false, 1.f, "matmul");
}

// alpha · a (..., M, K) @ b (..., N, K)ᵀ -> (..., M, N)
Tensor matmul_nt(const Tensor& a, const Tensor& b, float alpha) {
    detail::require_defined(a, "matmul_nt", "the first operand");
    detail::require_defined(b, "matmul_nt", "the second operand");
    if (a.dim() < 2 || b.dim() < 2)
        fail("matmul_nt: operands must have at least 2 dims, got {} and {}", shape_str(a.shape()), shape_str(b.shape()));
    return product(a, b, true, alpha, "matmul_nt");
}

// x (..., in) · weight (out, in)ᵀ + bias (out) -> (..., out)
namespace {
// A Linear under autocast keeps its input as bf16 only. Its dW product (M, N, K) runs in bf16
// unless bf16_min_side was raised since forward (a test knob): then it reads fp32 operands, and
// the kept copy, widened, is the input it multiplied in forward. Null when bf16 still runs.
const float* widened_if_fp32(const autocast::Bf16Values& x16, int M, int N, int K) {
    if (!bf16_product_in_fp32(M, N, K)) return nullptr;
    thread_local std::vector<float> wide;
    wide.resize(x16.size());
    for (std::size_t i = 0; i < x16.size(); ++i) wide[i] = from_bf16_bits(x16[i]);
    return wide.data();
}

// t (count, ...) placed at rows [first, first + count) of zeros (rows, ...): a block's gradient in the
// whole weight's (cat is differentiable; the zeros are constants)
Tensor into_rows(const Tensor& t, std::size_t first, std::size_t rows) {
    const std::size_t count = t.size(0);
    if (first == 0 && count == rows) return t;
    std::vector<Tensor> parts;
    Shape s = t.shape();
    if (first > 0) {
        s[0] = first;
        parts.push_back(Tensor::zeros(s));
    }
    parts.push_back(t);
    if (first + count < rows) {
        s[0] = rows - first - count;
        parts.push_back(Tensor::zeros(s));
    }
    return cat(parts, 0);
}

// linear_block's backward in ops: dx = dy W[block], dW[block] = dyᵀ x, db[block] = Σ dy
Node::DifferentiableFn linear_in_ops(const Shape& xs, const Shape& ws, std::size_t first, std::size_t count) {
    return [xs, ws, first, count](const Node& self, const Tensor& g) -> Grads {
        const std::vector<std::string> names = self.saved_names();
        if (std::find(names.begin(), names.end(), "input") == names.end())
            fail("LinearBackward: inside a bf16 autocast scope the input was kept in bf16 only, so this backward cannot "
                 "be differentiated (create_graph); take higher derivatives outside the autocast scope");
        const Tensor w = self.saved_tensor("weight");
        const Tensor block = first == 0 && count == ws[0] ? w : narrow(w, 0, first, count);
        const long rows = static_cast<long>(detail::prod(xs, 0, xs.size() - 1));
        const Tensor g2 = reshape(g, {rows, static_cast<long>(count)});
        Grads out(self.inputs().size());
        if (self.needs_grad(0)) out[0] = matmul(g, block);
        if (self.needs_grad(1)) {
            const Tensor x2 = reshape(self.saved_tensor("input"), {rows, static_cast<long>(ws[1])});
            out[1] = into_rows(matmul(transpose(g2, 0, 1), x2), first, ws[0]);
        }
        if (out.size() > 2 && self.needs_grad(2)) out[2] = into_rows(sum(g2, {0}), first, ws[0]);
        return out;
    };
}

// linear and linear_rows: x (..., in) · W[first : first + count]ᵀ + bias[first : first + count]
// -> (..., count), the block read in place (row stride `in`). `op` names the caller in errors.
Tensor linear_block_value(const Tensor& x, const Tensor& weight, const Tensor& bias, std::size_t first,
                          std::optional<std::size_t> rows_wanted, const char* op) {
    detail::require_defined(x, op, "the input");
    detail::require_defined(weight, op, "the weight");
    const Shape xs = x.shape(), ws = weight.shape();
    if (ws.size() != 2) fail("{}: weight must be 2-D (out, in), got {}", op, shape_str(ws));
    if (xs.empty() || xs.back() != ws[1])
        fail("{}: input {} does not fit weight {}: last dim {} but in_features {}", op, shape_str(xs), shape_str(ws),
             xs.empty() ? 0 : xs.back(), ws[1]);
    if (bias.defined() && (bias.dim() != 1 || bias.size(0) != ws[0]))
        fail("{}: bias {} does not fit weight {}: expected ({})", op, shape_str(bias.shape()), shape_str(ws), ws[0]);
    const std::size_t count = rows_wanted.value_or(ws[0]);
    if (first > ws[0] || count > ws[0] - first)
        fail("{}: rows [{}, {}) are not within the weight's {} rows (weight {})", op, first, first + count, ws[0],
             shape_str(ws));
    const std::size_t rows = detail::prod(xs, 0, xs.size() - 1), in = ws[1];
    Shape out_shape = xs;
    out_shape.back() = count;
    Array out = empty_array(out_shape);
    const int r = detail::to_blas_int(rows, op), ni = detail::to_blas_int(in, op), no = detail::to_blas_int(count, op);
    const std::size_t w_offset = first * in;
    // bf16 operands inside an autocast scope, for backward too; a product with a short side (a
    // 7-token sentence) runs in fp32 (bf16_product_in_fp32: converting would cost more). Forward
    // (x·Wᵀ, W as (count, in) transposed) and backward (dy·W, W as (count, in)) read W's block in
    // its stored order, so one bf16 copy of the weight per version serves both.
    const DType p = bf16_product_in_fp32(r, no, ni) ? DType::fp32 : autocast::dtype();
    const autocast::Bf16Copy w16 = p == DType::bf16 ? autocast::bf16_weight(weight) : nullptr;
    const std::uint16_t* w16_block = w16 ? w16->data() + w_offset : nullptr;
    // x in bf16 once, shared with the layers reading the same x and kept for dW in place of x
    const autocast::Bf16Copy x16 = p == DType::bf16 ? autocast::bf16_activation(x) : nullptr;
    // Under NoGradGuard a parameter's product runs on Wᵀ kept per version where the backend runs
    // A·B faster than A·Bᵀ (autograd/transposed_weights.hpp); training's forwards drop those copies.
    // In bf16 it runs on a packed copy kept per version where the backend has one
    // (autograd/packed_weights.hpp); the same training forwards drop those too.
    detail::TransposedCopy wt;
    std::shared_ptr<const void> w_packed;
    if (is_grad_enabled()) {
        detail::drop_transposed_weights();
        detail::drop_packed_weights();
    } else if (p == DType::fp32 && nt_faster_as_nn(r, no, ni)) {
        wt = detail::transposed_weight(weight);
    } else if (p == DType::bf16 && x16 && inference_weights_packed()) {
        w_packed = detail::packed_bf16_weight(weight, w16, first, count, r);
    }
    // + bias: in the bf16 product's epilogue, else a pass over y as big as the product's output
    const float* b = bias.defined() ? bias.ptr() + first : nullptr;
    if (w_packed) {  // y (rows, count) = x (rows, in) W[first:first+count]ᵀ, W's block packed
        gemm_bias_packed_weight(r, no, ni, x16->data(), w16_block, w_packed.get(), b, out.data());
    } else if (wt) {  // y (rows, count) = x (rows, in) Wᵀ[:, first:first+count] (in, count), Wᵀ's row stride out
        gemm_ld(false, false, r, no, ni, 1.f, x.ptr(), ni, wt->data() + first,
                detail::to_blas_int(ws[0], op), 0.f, out.data(), no);
        add_bias_rows(out.data(), r, no, no, b);
    } else {  // y (rows, count) = x (rows, in) W[first:first+count] (count, in)ᵀ
        gemm_bias(p, false, true, r, no, ni, x.ptr(), x16 ? x16->data() : nullptr, weight.ptr() + w_offset, w16_block, b,
                  out.data());
    }
    std::vector<Tensor> inputs{x, weight};
    if (bias.defined()) inputs.push_back(bias);
    std::vector<SavedRecord> saved{{"weight", weight}};
    if (!x16) saved.insert(saved.begin(), {"input", x});
    return differentiable(make_result(std::move(out), "LinearBackward", inputs, std::move(saved),
                       [xs, ws, r, ni, no, first, w_offset, p, w16, x16](Node& self, const Array& g) {
                           const std::size_t block = static_cast<std::size_t>(no) * static_cast<std::size_t>(ni);
                           if (GradOut db_out = self.grad_out(2, {ws[0]})) {  // db[block] (count) = sum of dy over rows
                               // first, while dy is in cache from the node that wrote it (after the
                               // products it came from memory again: 3.8 % of seed-b's autocast step).
                               // Columns over the pool, each summed over the rows in order: the same
                               // sums for any thread count.
                               float* db = db_out.part(first, static_cast<std::size_t>(no)).zeroed();
                               const float* gy = g.data();
                               const auto n_out = static_cast<std::size_t>(no), n_rows = static_cast<std::size_t>(r);
                               parallel_rows(n_out, n_rows, [&](std::size_t j0, std::size_t j1) {
                                   add_column_sums(gy, n_rows, n_out, j0, j1, db);
                               });
                           }
                           const GradOut dx = self.grad_out(0, xs);
                           const bool dW_wanted = self.needs_grad(1);
                           // dy (rows, count) in bf16 once when both products read it: dx reads dy,
                           // dW reads dyᵀ (dy transposed by flag), the same stored order
                           // (grown, never shrunk: a vector's growth writes zeros, a pass as long
                           // as the conversion, after every smaller layer)
                           thread_local std::vector<std::uint16_t> dy16;
                           const std::uint16_t* g16 = nullptr;
                           if (p == DType::bf16 && dx && dW_wanted) {
                               const std::size_t dy_size = static_cast<std::size_t>(r) * static_cast<std::size_t>(no);
                               if (dy16.size() < dy_size) dy16.resize(dy_size);
                               convert_to_bf16(g.data(), r, no, no, dy16.data());
                               g16 = dy16.data();
                           }
                           if (dx) {  // dx (rows, in) = dy (rows, count) W[block]
                               // saved() first: it throws if W was written since forward (then w16 is stale too)
                               const float* w = self.saved("weight").data() + w_offset;
                               gemm(p, false, false, r, ni, no, 1.f, g.data(), g16, w, w16 ? w16->data() + w_offset : nullptr,
                                    dx.beta(), dx.data());
                           }
                           // dW[block] (count, in) = dyᵀ (count, rows) x (rows, in). The whole weight's
                           // fp32 gradient may go straight to the optimizer's step in backward, proven
                           // finite from dy and x (autograd/gradient_consumer.hpp): after dx, which reads
                           // the weight that step updates.
                           const auto dW_product = [&](float* out) {
                               gemm(true, false, no, ni, r, 1.f, g.data(), self.saved("input").data(), 0.f, out);
                           };
                           const auto dW_finite = [&] {
                               return detail::product_provably_finite(g.data(), g.size(), self.saved("input").data(),
                                                                      static_cast<std::size_t>(r) * static_cast<std::size_t>(ni), r,
                                                                      block);
                           };
                           bool dW_consumed = false;
                           if (dW_wanted && p == DType::fp32 && block == ws[0] * ws[1]) {
                               // dW[o][i] = Σ_t dy[t][o] · x[t][i]: the product's factors, in place
                               const vec::RankKGradient factors{.rows = ws[0], .cols = ws[1], .rank = r,
                                                                .a = g.data(), .a_row = 1, .a_rank = no,
                                                                .b = self.saved("input").data(), .b_rank = ni, .b_col = 1};
                               dW_consumed = give_gradient_to_consumer(self, 1, ws, dW_finite, dW_product, &factors);
                           }
                           if (dW_wanted && !dW_consumed) {
                               const GradOut part = self.grad_out(1, ws).part(w_offset, block);
                               const float* x = x16 ? widened_if_fp32(*x16, no, ni, r) : self.saved("input").data();
                               gemm(p, true, false, no, ni, r, 1.f, g.data(), g16, x, x16 ? x16->data() : nullptr,
                                    part.beta(), part.data());
                           }
                       }),
                       linear_in_ops(xs, ws, first, static_cast<std::size_t>(no)));
}

// jvp: tx W[block]ᵀ + x tW[block]ᵀ + tb[block], linear in each input
Tensor linear_block(const Tensor& x, const Tensor& weight, const Tensor& bias, std::size_t first,
                    std::optional<std::size_t> rows_wanted, const char* op) {
    return detail::with_jvp(
        linear_block_value(x, weight, bias, first, rows_wanted, op), {&x, &weight, &bias},
        [&](const detail::Tangents& t) {
            const std::size_t count = rows_wanted.value_or(weight.size(0));
            Tensor out = t.has(0) ? linear_block_value(t[0], weight, Tensor(), first, rows_wanted, op) : Tensor();
            if (t.has(1)) out = detail::add_terms(out, linear_block_value(x, t[1], Tensor(), first, rows_wanted, op));
            if (t.has(2)) out = detail::add_terms(out, narrow(t[2], 0, first, count));
            return out;
        });
}
}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
    return linear_block(x, weight, bias, 0, std::nullopt, "linear");
}

Tensor linear_rows(const Tensor& x, const Tensor& weight, const Tensor& bias, std::size_t first, std::size_t count) {
    return linear_block(x, weight, bias, first, count, "linear_rows");
}

}  // namespace xtgrad
