// The attention core as two fused nodes (docs/derivations.md, "The fused attention core"); for
// callers that never read the weights, attention_context.cpp makes it one node that keeps none:
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
#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/autograd/ops/dropout.hpp>
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/autograd/ops/attention_blocks.hpp>
#include <xtgrad/autograd/ops/common.hpp>

#include <vector>

namespace xtgrad {

using namespace attention_detail;

// The weights' tangent from primitives: the scores' tS = scale (tq kᵀ + q tkᵀ), 0 where masked
// (a constant fill), + t_additive; then softmax's jvp, w (tS - Σ w tS). w (..., Lq, Lk).
Tensor attention_detail::attention_weights_jvp(const Tensor& q, const Tensor& k, const Tensor& w, float scale,
                                               const Mask* masked, const detail::Tangents& t) {
    Tensor ts = t.has(0) ? matmul_nt(t[0], k, scale) : Tensor();
    if (t.has(1)) ts = detail::add_terms(ts, matmul_nt(q, t[1], scale));
    if (ts.defined() && masked) ts = masked_fill(ts, *masked, 0.f);
    if (t.has(2)) ts = detail::add_terms(ts, t[2]);
    return mul(w, sub(ts, sum(mul(w, ts), {-1}, true)));
}

// q (..., Lq, d), k (..., Lk, d) -> weights (..., Lq, Lk)
Tensor attention_weights(const Tensor& q, const Tensor& k, float scale, const Mask* masked, float fill,
                         const Tensor& additive) {
    constexpr const char* op = "attention_weights";
    require_matrices(q, k, op, "query and key");
    if (q.size(-1) != k.size(-1))
        fail("{}: query {} and key {} differ in the last dim (d_k)", op, shape_str(q.shape()), shape_str(k.shape()));
    Shape shape = q.shape();
    shape.back() = k.size(-2);
    const Blocks b{detail::prod(shape, 0, shape.size() - 2), q.size(-2), k.size(-2), autocast::dtype()};
    detail::to_blas_int(q.size(-1), op), detail::to_blas_int(b.Lq, op), detail::to_blas_int(b.Lk, op);  // GEMM sizes fit
    const ScoreMasks m = score_masks(shape, masked, fill, additive.defined() ? &additive.data() : nullptr, op);
    const Shape masked_shape = masked ? Shape(masked->shape().begin(), masked->shape().end()) : Shape();
    Array out = empty_array(shape);
    const std::size_t dk = q.size(-1);
    const BlockPlace qp{b.Lq, dk}, kp{b.Lk, dk};
    const double flops = 2.0 * static_cast<double>(b.size()) * static_cast<double>(dk);
    {
        const float *Q = q.ptr(), *K = k.ptr();
        float* W = out.data();
        for_each_slice(b.count, flops, true, [&](std::size_t c) {
            weights_block(c, Q, qp, K, kp, scale, m, b, W + c * b.size(), shape);
        });
    }
    std::vector<Tensor> inputs{q, k};
    if (additive.defined()) inputs.push_back(additive);
    Tensor weights(std::move(out));
    std::vector<SavedRecord> saved{{"query", q}, {"key", k}, {"result", weights}};
    if (masked) saved.push_back({"mask", *masked});
    const Shape qs = q.shape(), ks = k.shape();
    return detail::with_jvp(differentiable(attach_grad_fn(
        weights, "AttentionWeightsBackward", inputs, std::move(saved),
        [b, qp, kp, scale, flops, shape, masked_shape, has_mask = masked != nullptr, qs, ks](Node& self, const Array& g) {
            // per block c: the weights' backward (weights_backward_block) with g as dw
            const float* W = self.saved("result").data();  // read here: a stale Saved throws on this thread
            const float* Q = self.saved("query").data();
            const float* K = self.saved("key").data();
            const Mask* mask = has_mask ? &self.saved_mask("mask") : nullptr;
            const BroadcastIndex mask_at = has_mask ? broadcast_index(masked_shape, shape) : BroadcastIndex{};
            // The additive mask's gradient is the whole dS, summed back to its shape by accumulate.
            const bool additive_grad = self.needs_grad(2);
            Array d_additive = additive_grad ? empty_array(shape) : Array();
            const GradOut dq = self.grad_out(0, qs), dk_out = self.grad_out(1, ks);
            const WeightsGrads out{dq, dk_out, additive_grad ? d_additive.data() : nullptr,
                                   mask ? mask->data() : nullptr, mask_at};
            for_each_slice(b.count, 2 * flops, true, [&](std::size_t c) {
                const std::size_t at = c * b.size();
                weights_backward_block(c, g.data() + at, W + at, Q, qp, K, kp, scale, b, out, scratch(b.size()));
            });
            if (additive_grad) self.accumulate(2, std::move(d_additive));
        }),
        // in ops, with w the weights as a tensor of the graph:
        //   dS = w (g - Σ g w), zero where masked for q and k; dq = scale dS k, dk = scale dSᵀ q, d additive = dS
        [scale, has_mask = masked != nullptr, has_additive = additive.defined()](const Node& self, const Tensor& g) -> Grads {
            const Tensor w = self.saved_tensor("result");
            const Tensor dS = mul(w, sub(g, sum(mul(g, w), {-1}, true)));
            const Tensor dSq = has_mask ? masked_fill(dS, self.saved_mask("mask"), 0.f) : dS;
            Grads out(has_additive ? 3 : 2);
            if (self.needs_grad(0)) out[0] = mul(matmul(dSq, self.saved_tensor("key")), scale);
            if (self.needs_grad(1)) out[1] = mul(matmul(transpose(dSq, -2, -1), self.saved_tensor("query")), scale);
            if (has_additive && self.needs_grad(2)) out[2] = dS;
            return out;
        }),
        {&q, &k, &additive}, [&](const detail::Tangents& t) { return attention_weights_jvp(q, k, weights, scale, masked, t); });
}

// weights (..., Lq, Lk), v (..., Lk, dv) -> dropout(weights, p) v (..., Lq, dv)
Tensor dropout_matmul(const Tensor& weights, const Tensor& v, float p, bool training, Generator& gen) {
    constexpr const char* op = "dropout_matmul";
    require_matrices(weights, v, op, "weights and value");
    check_dropout_probability(p, op);
    if (weights.size(-1) != v.size(-2))
        fail("{}: weights {} attend over {} keys but value {} has {} rows", op, shape_str(weights.shape()),
             weights.size(-1), shape_str(v.shape()), v.size(-2));
    const Blocks b{detail::prod(weights.shape(), 0, weights.dim() - 2), weights.size(-2), weights.size(-1),
                   autocast::dtype()};
    const std::size_t dv = v.size(-1);
    detail::to_blas_int(dv, op), detail::to_blas_int(b.Lq, op), detail::to_blas_int(b.Lk, op);  // GEMM sizes fit
    const BlockPlace vp{b.Lk, dv}, cp{b.Lq, dv};
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
        for_each_slice(b.count, flops, true, [&](std::size_t c) {
            context_block(c, W + c * b.size(), drops ? kept + c * b.size() : nullptr, keep, V, vp, b, C, cp,
                          scratch(b.size()));
        });
    }
    std::vector<SavedRecord> saved{{"self", weights}, {"mat2", v}};
    // for the jvp, the dropout scale (kept · keep) as a constant, before the mask moves into the node
    const Tensor dropout_scale =
        drops && detail::forward_active() ? Tensor(Array(xt::cast<float>(drawn.kept) * keep)) : Tensor();
    if (drops) saved.push_back({"mask", std::move(drawn.kept)});
    const Shape ws = weights.shape(), vs = v.shape();
    return detail::with_jvp(differentiable(make_result(
        std::move(out), "DropoutMatmulBackward", {weights, v}, std::move(saved),
        [b, vp, cp, keep, drops, flops, ws, vs](Node& self, const Array& g) {
            // per block c: context_backward_block (dropped recomputed from w and the mask)
            const float* W = self.saved("self").data();  // read here: a stale Saved throws on this thread
            const float* V = self.saved("mat2").data();
            const bool* kept = drops ? self.saved_mask("mask").data() : nullptr;
            const GradOut dw = self.grad_out(0, ws), dv_out = self.grad_out(1, vs);
            for_each_slice(b.count, 2 * flops, true, [&](std::size_t c) {
                const std::size_t at = c * b.size();
                context_backward_block(c, g.data(), cp, W + at, V, vp, kept ? kept + at : nullptr, keep, b,
                                       dw ? dw.data() + at : nullptr, dw.beta(), dv_out ? dv_out.data() : nullptr,
                                       dv_out.beta(), scratch(2 * b.size()));
            });
        }),
        // in ops: D = dropout(w) = w · kept · keep (a constant), dw = (g vᵀ) · kept · keep, dv = Dᵀ g
        [keep, drops](const Node& self, const Tensor& g) -> Grads {
            const Tensor w = self.saved_tensor("self"), v = self.saved_tensor("mat2");
            const Tensor scale = drops ? mul(self.saved_constant("mask"), keep) : Tensor();
            Grads out(2);
            if (self.needs_grad(0)) out[0] = drops ? mul(matmul_nt(g, v), scale) : matmul_nt(g, v);
            if (self.needs_grad(1)) out[1] = matmul(transpose(drops ? mul(w, scale) : w, -2, -1), g);
            return out;
        }),
        // jvp: D(tw) v + D(w) tv, D = the same dropout (mask and scale), linear
        {&weights, &v}, [&](const detail::Tangents& t) {
            const auto dropped = [&](const Tensor& x) { return drops ? mul(x, dropout_scale) : x; };
            return detail::add_terms(t.has(0) ? matmul(dropped(t[0]), v) : Tensor(),
                                     t.has(1) ? matmul(dropped(weights), t[1]) : Tensor());
        });
}

}  // namespace xtgrad
