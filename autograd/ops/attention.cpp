// The attention core as two fused nodes (docs/derivations.md, "The fused attention core"):
//
//   attention_weights  weights = softmax(fill where masked (q kᵀ·scale) + additive)   (..., Lq, Lk)
//   dropout_matmul     context = dropout(weights, p) v                                (..., Lq, dv)
//
// The composition of matmul_nt, masked_fill, add, softmax, dropout and matmul makes five
// (..., Lq, Lk) tensors and keeps three for backward (the weights, the dropped weights, a byte
// mask broadcast to the scores); these keep the weights and dropout's byte mask only. Each node
// works one (batch, head) block of (Lq, Lk) at a time; blocks are independent, so they are split
// over xtgrad's pool (for_each_slice) with the same result for any thread count. Every step is
// the same arithmetic as the composition's (the same GEMM calls, softmax rows and masks), so the
// results are bit for bit those of the composition.
#include "autograd/blas.hpp"
#include "autograd/broadcast.hpp"
#include "autograd/kernels.hpp"
#include "autograd/ops.hpp"
#include "autograd/ops/common.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace xtgrad {

namespace {

// (batch..., Lq, Lk) seen as `count` blocks of (Lq, Lk): block c is batch index c.
struct Blocks {
    std::size_t count, Lq, Lk;
    std::size_t size() const { return Lq * Lk; }
};

// Where element (i, j) of block c sits in a mask broadcast to (batch..., Lq, Lk): strides are 0
// along the dims the mask broadcasts, so no broadcast copy is made.
struct BroadcastIndex {
    std::vector<std::size_t> block_offset;  // per block c
    std::size_t row_stride = 0, col_stride = 0;
    std::size_t at(std::size_t c, std::size_t i, std::size_t j) const {
        return block_offset[c] + i * row_stride + j * col_stride;
    }
};

BroadcastIndex broadcast_index(const Shape& from, const Shape& to) {
    const std::size_t n = to.size(), lead = n - from.size();
    std::vector<std::size_t> stride(n, 0);
    for (std::size_t i = n, s = 1; i-- > lead;) {
        const std::size_t d = from[i - lead];
        stride[i] = d == 1 ? 0 : s;
        s *= d;
    }
    BroadcastIndex r{{}, stride[n - 2], stride[n - 1]};
    std::vector<std::size_t> idx(n - 2, 0);
    r.block_offset.resize(detail::prod(to, 0, n - 2));
    for (std::size_t& off : r.block_offset) {
        off = 0;
        for (std::size_t i = 0; i < n - 2; ++i) off += idx[i] * stride[i];
        for (std::size_t i = n - 2; i-- > 0;) {  // odometer
            if (++idx[i] < to[i]) break;
            idx[i] = 0;
        }
    }
    return r;
}

// A scratch buffer of n floats for the calling thread (the pool's threads are persistent, so
// each reuses its own).
float* scratch(std::size_t n) {
    thread_local std::vector<float> buffer;
    if (buffer.size() < n) buffer.resize(n);
    return buffer.data();
}

Shape batch_dims(const Shape& s) { return Shape(s.begin(), s.end() - 2); }

void require_matrices(const Tensor& a, const Tensor& b, const char* op, const char* names) {
    detail::require_defined(a, op, "the first operand");
    detail::require_defined(b, op, "the second operand");
    if (a.dim() < 2 || b.dim() < 2 || batch_dims(a.shape()) != batch_dims(b.shape()))
        fail("{}: {} must be (..., L, d) with the same batch dims, got {} and {}", op, names, shape_str(a.shape()),
             shape_str(b.shape()));
}

// The masks of attention_weights, with their broadcast layouts. masked is null when absent.
struct ScoreMasks {
    const bool* masked = nullptr;
    BroadcastIndex masked_at;
    float fill = 0.f;
    const float* additive = nullptr;
    BroadcastIndex additive_at;
};

// One block c:  q (Lq, d), k (Lk, d) -> w (Lq, Lk)
//   w = q kᵀ · scale;  w[i, j] = fill where masked;  w += additive;  softmax of each row, in place
void weights_block(std::size_t c, const float* q, const float* k, float scale, const ScoreMasks& m, const Blocks& b,
                   int d, float* w, const Shape& shape) {
    gemm(false, true, static_cast<int>(b.Lq), static_cast<int>(b.Lk), d, scale, q, k, 0.f, w);
    for (std::size_t i = 0; i < b.Lq; ++i) {
        float* row = w + i * b.Lk;
        if (m.masked)
            for (std::size_t j = 0; j < b.Lk; ++j)
                if (m.masked[m.masked_at.at(c, i, j)]) row[j] = m.fill;
        if (m.additive)
            for (std::size_t j = 0; j < b.Lk; ++j) row[j] += m.additive[m.additive_at.at(c, i, j)];
        // "softmax" in errors, as the composition's softmax op named a fully masked row
        softmax_row(row, row, b.Lk, 1, false, {"softmax", c * b.Lq + i, shape});
    }
}

}  // namespace

// q (..., Lq, d), k (..., Lk, d) -> weights (..., Lq, Lk)
Tensor attention_weights(const Tensor& q, const Tensor& k, float scale, const Mask* masked, float fill,
                         const Tensor& additive) {
    constexpr const char* op = "attention_weights";
    require_matrices(q, k, op, "query and key");
    if (q.size(-1) != k.size(-1))
        fail("{}: query {} and key {} differ in the last dim (d_k)", op, shape_str(q.shape()), shape_str(k.shape()));
    Shape shape = q.shape();
    shape.back() = k.size(-2);
    const Blocks b{detail::prod(shape, 0, shape.size() - 2), q.size(-2), k.size(-2)};
    const int d = detail::to_blas_int(q.size(-1), op), Lq = detail::to_blas_int(b.Lq, op),
              Lk = detail::to_blas_int(b.Lk, op);
    ScoreMasks m;
    Shape masked_shape;
    if (masked) {
        masked_shape.assign(masked->shape().begin(), masked->shape().end());
        if (!broadcasts_to(masked_shape, shape))
            fail("{}: mask of shape {} does not broadcast to the scores {}", op, shape_str(masked_shape), shape_str(shape));
        m = {masked->data(), broadcast_index(masked_shape, shape), fill, nullptr, {}};
    }
    if (additive.defined()) {
        if (!broadcasts_to(additive.shape(), shape))
            fail("{}: additive mask of shape {} does not broadcast to the scores {}", op, shape_str(additive.shape()),
                 shape_str(shape));
        m.additive = additive.ptr();
        m.additive_at = broadcast_index(additive.shape(), shape);
    }
    Array out = empty_array(shape);
    const std::size_t dk = q.size(-1);
    const double flops = 2.0 * static_cast<double>(b.size()) * static_cast<double>(dk);
    {
        const float *Q = q.ptr(), *K = k.ptr();
        float* W = out.data();
        for_each_slice(b.count, flops, true, [&](std::size_t c) {
            weights_block(c, Q + c * b.Lq * dk, K + c * b.Lk * dk, scale, m, b, d, W + c * b.size(), shape);
        });
    }
    std::vector<Tensor> inputs{q, k};
    if (additive.defined()) inputs.push_back(additive);
    Tensor weights(std::move(out));
    std::vector<SavedRecord> saved{{"query", q}, {"key", k}, {"result", weights}};
    if (masked) saved.push_back({"mask", *masked});
    const Shape qs = q.shape(), ks = k.shape();
    return attach_grad_fn(
        weights, "AttentionWeightsBackward", inputs, std::move(saved),
        [b, d, Lq, Lk, dk, scale, flops, shape, masked_shape, has_mask = masked != nullptr, qs, ks](Node& self, const Array& g) {
            // per block c, g and w (Lq, Lk):
            //   dS = w ⊙ (g - Σ_j g w)             softmax backward; the additive mask's gradient
            //   dS = 0 where masked                the filled scores do not depend on q, k
            //   dq (Lq, d) = scale · dS k          dk (Lk, d) = scale · dSᵀ q
            const float* W = self.saved("result").data();  // read here: a stale Saved throws on this thread
            const float* Q = self.saved("query").data();
            const float* K = self.saved("key").data();
            const Mask* mask = has_mask ? &self.saved_mask("mask") : nullptr;
            const BroadcastIndex mask_at = has_mask ? broadcast_index(masked_shape, shape) : BroadcastIndex{};
            // The additive mask's gradient is the whole dS, summed back to its shape by accumulate.
            const bool additive_grad = self.needs_grad(2);
            Array d_additive = additive_grad ? empty_array(shape) : Array();
            GradOut dq = self.grad_out(0, qs), dk_out = self.grad_out(1, ks);
            for_each_slice(b.count, 2 * flops, true, [&](std::size_t c) {
                const std::size_t at = c * b.size();
                float* ds = scratch(b.size());
                softmax_backward(g.data() + at, W + at, GradOut::overwrite(ds, b.size()), b.Lq, b.Lk, 1, false);
                if (additive_grad) std::memcpy(d_additive.data() + at, ds, b.size() * sizeof(float));
                if (mask)
                    for (std::size_t i = 0; i < b.Lq; ++i)
                        for (std::size_t j = 0; j < b.Lk; ++j)
                            if (mask->data()[mask_at.at(c, i, j)]) ds[i * b.Lk + j] = 0.f;
                if (dq) gemm(false, false, Lq, d, Lk, scale, ds, K + c * b.Lk * dk, dq.beta(), dq.data() + c * b.Lq * dk);
                if (dk_out)
                    gemm(true, false, Lk, d, Lq, scale, ds, Q + c * b.Lq * dk, dk_out.beta(), dk_out.data() + c * b.Lk * dk);
            });
            if (additive_grad) self.accumulate(2, std::move(d_additive));
        });
}

namespace {

// One block: w (Lq, Lk) -> dropped (Lq, Lk) = w ⊙ (kept ? keep : 0), as dropout computes it.
void drop_block(const float* w, const bool* kept, float keep, std::size_t n, float* dropped) {
    for (std::size_t i = 0; i < n; ++i) dropped[i] = w[i] * (kept[i] ? keep : 0.f);
}

}  // namespace

// weights (..., Lq, Lk), v (..., Lk, dv) -> dropout(weights, p) v (..., Lq, dv)
Tensor dropout_matmul(const Tensor& weights, const Tensor& v, float p, bool training, Generator& gen) {
    constexpr const char* op = "dropout_matmul";
    require_matrices(weights, v, op, "weights and value");
    check_dropout_probability(p, op);
    if (weights.size(-1) != v.size(-2))
        fail("{}: weights {} attend over {} keys but value {} has {} rows", op, shape_str(weights.shape()),
             weights.size(-1), shape_str(v.shape()), v.size(-2));
    const Blocks b{detail::prod(weights.shape(), 0, weights.dim() - 2), weights.size(-2), weights.size(-1)};
    const std::size_t dv = v.size(-1);
    const int Lq = detail::to_blas_int(b.Lq, op), Lk = detail::to_blas_int(b.Lk, op), n = detail::to_blas_int(dv, op);
    const bool drops = training && p > 0.f;
    // Drawn for the whole tensor before any block, in dropout's order: the masks stay torch's.
    DropoutMask drawn = drops ? draw_dropout_mask(weights.shape(), p, gen) : DropoutMask{Mask(), 1.f};
    const float keep = drawn.keep;
    Shape shape = weights.shape();
    shape.back() = dv;
    Array out = empty_array(shape);
    const double flops = 2.0 * static_cast<double>(b.size()) * static_cast<double>(dv);
    {
        const float *W = weights.ptr(), *V = v.ptr();
        const bool* kept = drawn.kept.data();
        float* C = out.data();
        // per block: out (Lq, dv) = dropped (Lq, Lk) v (Lk, dv), dropped = w itself without dropout
        for_each_slice(b.count, flops, true, [&](std::size_t c) {
            const float* w = W + c * b.size();
            if (drops) {
                float* dropped = scratch(b.size());
                drop_block(w, kept + c * b.size(), keep, b.size(), dropped);
                w = dropped;
            }
            gemm(false, false, Lq, n, Lk, 1.f, w, V + c * b.Lk * dv, 0.f, C + c * b.Lq * dv);
        });
    }
    std::vector<SavedRecord> saved{{"self", weights}, {"mat2", v}};
    if (drops) saved.push_back({"mask", std::move(drawn.kept)});
    const Shape ws = weights.shape(), vs = v.shape();
    return make_result(
        std::move(out), "DropoutMatmulBackward", {weights, v}, std::move(saved),
        [b, dv, Lq, Lk, n, keep, drops, flops, ws, vs](Node& self, const Array& g) {
            // per block c, g (Lq, dv):
            //   d dropped (Lq, Lk) = g vᵀ           dw = d dropped ⊙ (kept ? keep : 0)
            //   dv (Lk, dv) = droppedᵀ g            (dropped recomputed from w and the mask)
            const float* W = self.saved("self").data();  // read here: a stale Saved throws on this thread
            const float* V = self.saved("mat2").data();
            const bool* kept = drops ? self.saved_mask("mask").data() : nullptr;
            GradOut dw = self.grad_out(0, ws), dv_out = self.grad_out(1, vs);
            for_each_slice(b.count, 2 * flops, true, [&](std::size_t c) {
                const std::size_t at = c * b.size();
                const float* gc = g.data() + c * b.Lq * dv;
                const float* w = W + at;
                float* work = drops ? scratch(2 * b.size()) : nullptr;
                if (drops) {
                    drop_block(w, kept + at, keep, b.size(), work);
                    w = work;
                }
                if (dw && drops) {
                    float* d_dropped = work + b.size();
                    gemm(false, true, Lq, Lk, n, 1.f, gc, V + c * b.Lk * dv, 0.f, d_dropped);
                    dw.write([&](float* d, auto store) {
                        for (std::size_t i = 0; i < b.size(); ++i) store(d[at + i], d_dropped[i] * (kept[at + i] ? keep : 0.f));
                    });
                } else if (dw) {
                    gemm(false, true, Lq, Lk, n, 1.f, gc, V + c * b.Lk * dv, dw.beta(), dw.data() + at);
                }
                if (dv_out) gemm(true, false, Lk, n, Lq, 1.f, w, gc, dv_out.beta(), dv_out.data() + c * b.Lk * dv);
            });
        });
}

}  // namespace xtgrad
