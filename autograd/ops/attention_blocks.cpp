#include <xtgrad/autograd/ops/attention_blocks.hpp>

#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/autograd/broadcast.hpp>
#include <xtgrad/autograd/ops/softmax.hpp>
#include <xtgrad/autograd/ops/common.hpp>

#include <algorithm>
#include <cstring>

namespace xtgrad::attention_detail {

BroadcastIndex broadcast_index(const Shape& from, const Shape& to) {
    const std::size_t n = to.size();
    const std::vector<std::size_t> stride = broadcast_strides(from, n);
    return {strided_offsets(to, n - 2, stride), stride[n - 2], stride[n - 1]};
}

float* scratch(std::size_t n) {
    thread_local std::vector<float> buffer;
    if (buffer.size() < n) buffer.resize(n);
    return buffer.data();
}

namespace {
Shape batch_dims(const Shape& s) { return Shape(s.begin(), s.end() - 2); }
}  // namespace

void require_matrices(const Tensor& a, const Tensor& b, const char* op, const char* names) {
    detail::require_defined(a, op, "the first operand");
    detail::require_defined(b, op, "the second operand");
    if (a.dim() < 2 || b.dim() < 2 || batch_dims(a.shape()) != batch_dims(b.shape()))
        fail("{}: {} must be (..., L, d) with the same batch dims, got {} and {}", op, names, shape_str(a.shape()),
             shape_str(b.shape()));
}

ScoreMasks score_masks(const Shape& scores, const Mask* masked, float fill, const Array* additive, const char* op) {
    ScoreMasks m;
    if (masked) {
        const Shape masked_shape(masked->shape().begin(), masked->shape().end());
        if (!broadcasts_to(masked_shape, scores))
            fail("{}: mask of shape {} does not broadcast to the scores {}", op, shape_str(masked_shape),
                 shape_str(scores));
        m.masked = masked->data();
        m.masked_at = broadcast_index(masked_shape, scores);
        m.fill = fill;
    }
    if (additive) {
        const Shape additive_shape = shape_of(*additive);
        if (!broadcasts_to(additive_shape, scores))
            fail("{}: additive mask of shape {} does not broadcast to the scores {}", op, shape_str(additive_shape),
                 shape_str(scores));
        m.additive = additive->data();
        m.additive_at = broadcast_index(additive_shape, scores);
    }
    return m;
}

namespace {
// One of the blocks' products, in the node's precision: under autocast, gemm_ld(DType::bf16) runs
// the blocks small_gemm takes in its bf16 kernel where the CPU has one, else in its fp32 kernels
// (gemm/blas.hpp, bf16_product_in_fp32), never through a library call set up per block.
// Operands with row strides (lda, ldb, ldc): a block's rows of heads packed along the last dim
// sit heads·width apart (BlockPlace).
void block_gemm(const Blocks& b, bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
                const float* B, int ldb, float beta, float* C, int ldc) {
    gemm_ld(b.operands, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
}  // namespace

namespace {
// Block c's score row i (Lk values): `value` where the mask, broadcast to the scores, is set.
// A mask's column stride is 1 (its last dim is the keys') or 0 (it broadcasts along them):
// a contiguous select the compiler vectorises, or the whole row, not a lookup per score.
void fill_masked(float* row, std::size_t Lk, const bool* masked, const BroadcastIndex& at, std::size_t c,
                 std::size_t i, float value) {
    const bool* m = masked + at.at(c, i, 0);
    if (at.col_stride == 0) {
        if (*m) std::fill(row, row + Lk, value);
        return;
    }
    for (std::size_t j = 0; j < Lk; ++j) row[j] = m[j] ? value : row[j];
}
}  // namespace

void weights_block(std::size_t c, const float* Q, const BlockPlace& qp, const float* K, const BlockPlace& kp,
                   float scale, const ScoreMasks& m, const Blocks& b, float* w, const Shape& scores) {
    const int Lk = static_cast<int>(b.Lk);
    block_gemm(b, false, true, static_cast<int>(b.Lq), Lk, static_cast<int>(qp.width), scale, qp.at(Q, c), qp.ld(),
               kp.at(K, c), kp.ld(), 0.f, w, Lk);
    for (std::size_t i = 0; i < b.Lq; ++i) {
        float* row = w + i * b.Lk;
        if (m.masked) fill_masked(row, b.Lk, m.masked, m.masked_at, c, i, m.fill);
        if (m.additive) {
            const float* a = m.additive + m.additive_at.at(c, i, 0);
            const std::size_t cs = m.additive_at.col_stride;
            for (std::size_t j = 0; j < b.Lk; ++j) row[j] += a[j * cs];
        }
        // "softmax" in errors, as the composition's softmax op named a fully masked row
        softmax_row(row, row, b.Lk, 1, false, {"softmax", c * b.Lq + i, scores});
    }
}

void weights_backward_block(std::size_t c, const float* dw, const float* w, const float* Q, const BlockPlace& qp,
                            const float* K, const BlockPlace& kp, float scale, const Blocks& b, const WeightsGrads& out,
                            float* ds) {
    const int Lq = static_cast<int>(b.Lq), Lk = static_cast<int>(b.Lk), d = static_cast<int>(qp.width);
    softmax_backward(dw, w, GradOut::overwrite(ds, b.size()), b.Lq, b.Lk, 1, false);
    if (out.d_additive) std::memcpy(out.d_additive + c * b.size(), ds, b.size() * sizeof(float));
    if (out.masked)
        for (std::size_t i = 0; i < b.Lq; ++i) fill_masked(ds + i * b.Lk, b.Lk, out.masked, out.masked_at, c, i, 0.f);
    if (out.dq)
        block_gemm(b, false, false, Lq, d, Lk, scale, ds, Lk, kp.at(K, c), kp.ld(), out.dq.beta(),
                   qp.at(out.dq.data(), c), qp.ld());
    if (out.dk)
        block_gemm(b, true, false, Lk, d, Lq, scale, ds, Lk, qp.at(Q, c), qp.ld(), out.dk.beta(),
                   kp.at(out.dk.data(), c), kp.ld());
}

namespace {
// w (n) -> dropped (n) = w ⊙ (kept ? keep : 0), as dropout computes it: the select as the
// byte (0 or 1) times keep, branch-free (autograd/ops/dropout.cpp says why).
void drop_block(const float* __restrict w, const bool* __restrict kept, float keep, std::size_t n,
                float* __restrict dropped) {
    for (std::size_t i = 0; i < n; ++i) dropped[i] = w[i] * (static_cast<float>(kept[i]) * keep);
}
}  // namespace

void context_block(std::size_t c, const float* w, const bool* kept, float keep, const float* V, const BlockPlace& vp,
                   const Blocks& b, float* Out, const BlockPlace& op, float* work) {
    if (kept) {
        drop_block(w, kept, keep, b.size(), work);
        w = work;
    }
    const int Lk = static_cast<int>(b.Lk);
    block_gemm(b, false, false, static_cast<int>(b.Lq), static_cast<int>(vp.width), Lk, 1.f, w, Lk, vp.at(V, c),
               vp.ld(), 0.f, op.at(Out, c), op.ld());
}

void context_backward_block(std::size_t c, const float* G, const BlockPlace& gp, const float* w, const float* V,
                            const BlockPlace& vp, const bool* kept, float keep, const Blocks& b, float* dw,
                            float dw_beta, float* dV, float dv_beta, float* work) {
    const int Lq = static_cast<int>(b.Lq), Lk = static_cast<int>(b.Lk), dv = static_cast<int>(vp.width);
    const float *g = gp.at(G, c), *v = vp.at(V, c);
    if (kept) {
        drop_block(w, kept, keep, b.size(), work);
        w = work;
    }
    if (dw && kept) {
        float* d_dropped = work + b.size();
        block_gemm(b, false, true, Lq, Lk, dv, 1.f, g, gp.ld(), v, vp.ld(), 0.f, d_dropped, Lk);
        const auto scaled = [&](auto store) {
            for (std::size_t i = 0; i < b.size(); ++i) store(dw[i], d_dropped[i] * (static_cast<float>(kept[i]) * keep));
        };
        if (dw_beta == 0.f) scaled(Assign{});
        else scaled(Add{});
    } else if (dw) {
        block_gemm(b, false, true, Lq, Lk, dv, 1.f, g, gp.ld(), v, vp.ld(), dw_beta, dw, Lk);
    }
    if (dV) block_gemm(b, true, false, Lk, dv, Lq, 1.f, w, Lk, g, gp.ld(), dv_beta, vp.at(dV, c), vp.ld());
}

}  // namespace xtgrad::attention_detail
