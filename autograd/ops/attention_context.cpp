// attention_context: the whole attention core as one node, for callers that never read the
// weights (torch's need_weights=False; tutorials B and D):
//
//   context = dropout(softmax(fill where masked (q kᵀ·scale) + additive), p) v     (..., Lq, dv)
//
// attention_weights + dropout_matmul keep the (..., Lq, Lk) weights alive from forward to
// backward (for tutorial B at batch 64, 365 MB over its 18 attentions). This node keeps q, k, v,
// the masks and dropout's byte mask only, and its backward recomputes each (batch, head) block's
// weights: flash attention's trade, one more q kᵀ product per block for no weights in memory. The
// forward never materialises the weights either: each block's live in a thread's scratch buffer.
// The block steps are those of the two nodes (attention_blocks.hpp), so values and gradients are
// theirs bit for bit, on any thread count.
#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/autograd/ops/dropout.hpp>
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/autograd/ops/attention_blocks.hpp>
#include <xtgrad/autograd/ops/common.hpp>

#include <vector>

namespace xtgrad {

using namespace attention_detail;

// q (..., Lq, dk), k (..., Lk, dk), v (..., Lk, dv) -> context (..., Lq, dv)
Tensor attention_context(const Tensor& q, const Tensor& k, const Tensor& v, float scale, const Mask* masked, float fill,
                         const Tensor& additive, float p, bool training, Generator& gen) {
    constexpr const char* op = "attention_context";
    require_matrices(q, k, op, "query and key");
    require_matrices(k, v, op, "key and value");
    if (q.size(-1) != k.size(-1))
        fail("{}: query {} and key {} differ in the last dim (d_k)", op, shape_str(q.shape()), shape_str(k.shape()));
    if (k.size(-2) != v.size(-2))
        fail("{}: key {} and value {} differ in length", op, shape_str(k.shape()), shape_str(v.shape()));
    check_dropout_probability(p, op);
    Shape scores = q.shape();
    scores.back() = k.size(-2);
    const Blocks b{detail::prod(scores, 0, scores.size() - 2), q.size(-2), k.size(-2), autocast::dtype()};
    const std::size_t dk = q.size(-1), dv = v.size(-1);
    const int d = detail::to_blas_int(dk, op), n = detail::to_blas_int(dv, op);
    detail::to_blas_int(b.Lq, op), detail::to_blas_int(b.Lk, op);  // the blocks' GEMM sizes fit
    const ScoreMasks m = score_masks(scores, masked, fill, additive.defined() ? &additive.data() : nullptr, op);
    const bool drops = training && p > 0.f;
    // Drawn for the whole tensor before any block, in dropout's order: the masks stay torch's.
    DropoutMask drawn = drops ? draw_dropout_mask(scores, p, gen) : DropoutMask{Mask(), 1.f};
    const float keep = drawn.keep;
    Shape shape = q.shape();
    shape.back() = dv;
    Array out = empty_array(shape);
    const double flops = 2.0 * static_cast<double>(b.size()) * static_cast<double>(dk + dv);
    {
        const float *Q = q.ptr(), *K = k.ptr(), *V = v.ptr();
        const bool* kept = drawn.kept.data();
        float* C = out.data();
        // per block: w (Lq, Lk) in scratch, then out (Lq, dv) = dropout(w) v
        for_each_slice(b.count, flops, true, [&](std::size_t c) {
            float* w = scratch(2 * b.size());
            weights_block(c, Q + c * b.Lq * dk, K + c * b.Lk * dk, scale, m, b, d, w, scores);
            context_block(w, drops ? kept + c * b.size() : nullptr, keep, V + c * b.Lk * dv, b, n, C + c * b.Lq * dv,
                          w + b.size());
        });
    }
    std::vector<Tensor> inputs{q, k, v};
    if (additive.defined()) inputs.push_back(additive);
    std::vector<SavedRecord> saved{{"query", q}, {"key", k}, {"value", v}};
    if (masked) saved.push_back({"mask", *masked});
    if (additive.defined()) saved.push_back({"additive", additive});
    if (drops) saved.push_back({"dropout_mask", std::move(drawn.kept)});
    const Shape qs = q.shape(), ks = k.shape(), vs = v.shape();
    return make_result(
        std::move(out), "AttentionContextBackward", inputs, std::move(saved),
        [b, d, n, dk, dv, scale, fill, keep, drops, flops, scores, qs, ks, vs, has_mask = masked != nullptr,
         has_additive = additive.defined()](Node& self, const Array& g) {
            // per block c, g (Lq, dv): w recomputed (weights_block), then dropout_matmul's backward
            // (context_backward_block: dv, and dw = the weights' gradient), then attention_weights'
            // (weights_backward_block: dq, dk and the additive mask's gradient)
            const float* Q = self.saved("query").data();  // read here: a stale Saved throws on this thread
            const float* K = self.saved("key").data();
            const float* V = self.saved("value").data();
            const ScoreMasks m = score_masks(scores, has_mask ? &self.saved_mask("mask") : nullptr, fill,
                                             has_additive ? &self.saved("additive") : nullptr, "attention_context");
            const bool* kept = drops ? self.saved_mask("dropout_mask").data() : nullptr;
            const GradOut dq = self.grad_out(0, qs), dk_out = self.grad_out(1, ks), dv_out = self.grad_out(2, vs);
            // The additive mask's gradient is the whole dS, summed back to its shape by accumulate.
            const bool additive_grad = has_additive && self.needs_grad(3);
            Array d_additive = additive_grad ? empty_array(scores) : Array();
            const bool weights_grad = dq || dk_out || additive_grad;
            const WeightsGrads out{dq, dk_out, additive_grad ? d_additive.data() : nullptr, m.masked, m.masked_at};
            for_each_slice(b.count, 3 * flops, true, [&](std::size_t c) {
                const std::size_t at = c * b.size();
                // work: w | dropped, then ds | d dropped | dw, each (Lq, Lk)
                float* w = scratch(4 * b.size());
                float *pair = w + b.size(), *dw = w + 3 * b.size();
                const float *qc = Q + c * b.Lq * dk, *kc = K + c * b.Lk * dk;
                weights_block(c, qc, kc, scale, m, b, d, w, scores);
                context_backward_block(g.data() + c * b.Lq * dv, w, V + c * b.Lk * dv, kept ? kept + at : nullptr, keep,
                                       b, n, weights_grad ? dw : nullptr, 0.f,
                                       dv_out ? dv_out.data() + c * b.Lk * dv : nullptr, dv_out.beta(), pair);
                if (weights_grad) weights_backward_block(c, dw, w, qc, kc, scale, b, d, out, pair);
            });
            if (additive_grad) self.accumulate(3, std::move(d_additive));
        });
}

}  // namespace xtgrad
