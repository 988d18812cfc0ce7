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
//
// attention_context_heads: the same node on q, k, v with the heads packed along the last dim (a
// multi-head attention's projections, before split_heads), its context written merged (what
// merge_heads would give): each block's rows are read and written where they sit, with no
// split_heads or merge_heads copy (~2-3 % of tutorial B's step were those copies).
#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/autograd/ops/dropout.hpp>
#include <xtgrad/autograd/grad.hpp>
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/autograd/ops/attention_blocks.hpp>
#include <xtgrad/autograd/ops/common.hpp>

#include <vector>

namespace xtgrad {

using namespace attention_detail;

namespace {

// The operands' layout: the blocks' count and sizes, where each operand's blocks sit (q, k, v and
// the context; each gradient as its input), the scores' shape the masks broadcast to, and the
// context's shape.
struct ContextLayout {
    Blocks b;
    BlockPlace qp, kp, vp, cp;
    Shape scores, out;
};

// q (B, L, H·d) -> (B, H, L, d), and back
Tensor split_heads(const Tensor& t, std::size_t heads) {
    const long B = static_cast<long>(t.size(0)), L = static_cast<long>(t.size(1)), H = static_cast<long>(heads);
    return permute(reshape(t, {B, L, H, static_cast<long>(t.size(2)) / H}), {0, 2, 1, 3});
}
Tensor merge_heads(const Tensor& t) {
    const long B = static_cast<long>(t.size(0)), H = static_cast<long>(t.size(1)), L = static_cast<long>(t.size(2));
    return reshape(permute(t, {0, 2, 1, 3}), {B, L, H * static_cast<long>(t.size(3))});
}

// The node's backward in ops: its forward recomputed as attention_weights, the dropout mask as a
// constant and matmul (heads split and merged around them for the packed layout), and that
// graph's partials in q, k, v and the additive mask.
Node::DifferentiableFn context_in_ops(std::size_t heads, float scale, float fill, float keep, bool drops, bool has_mask,
                                      bool has_additive) {
    return [=](const Node& self, const Tensor& g) -> Grads {
        std::vector<Tensor> in{self.saved_tensor("query"), self.saved_tensor("key"), self.saved_tensor("value")};
        if (has_additive) in.push_back(self.saved_tensor("additive"));
        const bool packed = heads > 1;
        const Tensor q = packed ? split_heads(in[0], heads) : in[0];
        const Tensor k = packed ? split_heads(in[1], heads) : in[1];
        const Tensor v = packed ? split_heads(in[2], heads) : in[2];
        const Tensor w = attention_weights(q, k, scale, has_mask ? &self.saved_mask("mask") : nullptr, fill,
                                           has_additive ? in[3] : Tensor());
        const Tensor dropped = drops ? mul(w, mul(self.saved_constant("dropout_mask"), keep)) : w;
        const Tensor context = matmul(dropped, v);
        return detail::partials(packed ? merge_heads(context) : context, in, g);
    };
}

Tensor context_node(const Tensor& q, const Tensor& k, const Tensor& v, const ContextLayout& l, float scale,
                    const Mask* masked, float fill, const Tensor& additive, float p, bool training, Generator& gen,
                    const char* op) {
    const Blocks& b = l.b;
    const ScoreMasks m = score_masks(l.scores, masked, fill, additive.defined() ? &additive.data() : nullptr, op);
    const bool drops = training && p > 0.f;
    // Drawn for the whole tensor before any block, in dropout's order: the masks stay torch's.
    DropoutMask drawn = drops ? draw_dropout_mask(l.scores, p, gen) : DropoutMask{Mask(), 1.f};
    const float keep = drawn.keep;
    Array out = empty_array(l.out);
    const double flops = 2.0 * static_cast<double>(b.size()) * static_cast<double>(l.qp.width + l.vp.width);
    {
        const float *Q = q.ptr(), *K = k.ptr(), *V = v.ptr();
        const bool* kept = drawn.kept.data();
        float* C = out.data();
        // per block: w (Lq, Lk) in scratch, then out (Lq, dv) = dropout(w) v
        for_each_slice(b.count, flops, true, [&](std::size_t c) {
            float* w = scratch(2 * b.size());
            weights_block(c, Q, l.qp, K, l.kp, scale, m, b, w, l.scores);
            context_block(c, w, drops ? kept + c * b.size() : nullptr, keep, V, l.vp, b, C, l.cp, w + b.size());
        });
    }
    std::vector<Tensor> inputs{q, k, v};
    if (additive.defined()) inputs.push_back(additive);
    std::vector<SavedRecord> saved{{"query", q}, {"key", k}, {"value", v}};
    if (masked) saved.push_back({"mask", *masked});
    if (additive.defined()) saved.push_back({"additive", additive});
    // for the jvp, the dropout scale (kept · keep) as a constant, before the mask moves into the node
    const Tensor dropout_scale =
        drops && detail::forward_active() ? Tensor(Array(xt::cast<float>(drawn.kept) * keep)) : Tensor();
    if (drops) saved.push_back({"dropout_mask", std::move(drawn.kept)});
    const Shape qs = q.shape(), ks = k.shape(), vs = v.shape();
    return detail::with_jvp(differentiable(make_result(
        std::move(out), "AttentionContextBackward", inputs, std::move(saved),
        [l, scale, fill, keep, drops, flops, qs, ks, vs, has_mask = masked != nullptr,
         has_additive = additive.defined()](Node& self, const Array& g) {
            // per block c, g (Lq, dv): w recomputed (weights_block), then dropout_matmul's backward
            // (context_backward_block: dv, and dw = the weights' gradient), then attention_weights'
            // (weights_backward_block: dq, dk and the additive mask's gradient)
            const Blocks& b = l.b;
            const float* Q = self.saved("query").data();  // read here: a stale Saved throws on this thread
            const float* K = self.saved("key").data();
            const float* V = self.saved("value").data();
            const ScoreMasks m = score_masks(l.scores, has_mask ? &self.saved_mask("mask") : nullptr, fill,
                                             has_additive ? &self.saved("additive") : nullptr, "attention_context");
            const bool* kept = drops ? self.saved_mask("dropout_mask").data() : nullptr;
            const GradOut dq = self.grad_out(0, qs), dk_out = self.grad_out(1, ks), dv_out = self.grad_out(2, vs);
            // The additive mask's gradient is the whole dS, summed back to its shape by accumulate.
            const bool additive_grad = has_additive && self.needs_grad(3);
            Array d_additive = additive_grad ? empty_array(l.scores) : Array();
            const bool weights_grad = dq || dk_out || additive_grad;
            const WeightsGrads out{dq, dk_out, additive_grad ? d_additive.data() : nullptr, m.masked, m.masked_at};
            for_each_slice(b.count, 3 * flops, true, [&](std::size_t c) {
                const std::size_t at = c * b.size();
                // work: w | dropped, then ds | d dropped | dw, each (Lq, Lk)
                float* w = scratch(4 * b.size());
                float *pair = w + b.size(), *dw = w + 3 * b.size();
                weights_block(c, Q, l.qp, K, l.kp, scale, m, b, w, l.scores);
                context_backward_block(c, g.data(), l.cp, w, V, l.vp, kept ? kept + at : nullptr, keep, b,
                                       weights_grad ? dw : nullptr, 0.f, dv_out ? dv_out.data() : nullptr,
                                       dv_out.beta(), pair);
                if (weights_grad) weights_backward_block(c, dw, w, Q, l.qp, K, l.kp, scale, b, out, pair);
            });
            if (additive_grad) self.accumulate(3, std::move(d_additive));
        }),
        context_in_ops(l.qp.heads, scale, fill, keep, drops, masked != nullptr, additive.defined())),
        // jvp from primitives, heads split as in the backward in ops: the weights w recomputed, their
        // tangent tw (attention_weights_jvp), then D(tw) v + D(w) tv with D the same dropout
        {&q, &k, &v, &additive}, [&](const detail::Tangents& t) {
            const std::size_t heads = l.qp.heads;
            const auto split = [heads](const Tensor& x) { return heads > 1 && x.defined() ? split_heads(x, heads) : x; };
            const Tensor qh = split(q), kh = split(k), vh = split(v);
            const Tensor w = attention_weights(qh, kh, scale, masked, fill, additive);
            const Tensor tw = t.has(0) || t.has(1) || t.has(3)
                                  ? attention_weights_jvp(qh, kh, w, scale, masked, detail::Tangents{{split(t[0]), split(t[1]), t[3]}})
                                  : Tensor();
            const auto dropped = [&](const Tensor& x) { return drops ? mul(x, dropout_scale) : x; };
            const Tensor context = detail::add_terms(tw.defined() ? matmul(dropped(tw), vh) : Tensor(),
                                                     t.has(2) ? matmul(dropped(w), split(t[2])) : Tensor());
            return heads > 1 ? merge_heads(context) : context;
        });
}

}  // namespace

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
    const std::size_t Lq = q.size(-2), Lk = k.size(-2), dk = q.size(-1), dv = v.size(-1);
    for (std::size_t n : {Lq, Lk, dk, dv}) detail::to_blas_int(n, op);  // the blocks' GEMM sizes fit
    Shape out = q.shape();
    out.back() = dv;
    const ContextLayout l{{detail::prod(scores, 0, scores.size() - 2), Lq, Lk, autocast::dtype()},
                          {Lq, dk}, {Lk, dk}, {Lk, dv}, {Lq, dv}, scores, out};
    return context_node(q, k, v, l, scale, masked, fill, additive, p, training, gen, op);
}

// q (B, Lq, H·dk), k (B, Lk, H·dk), v (B, Lk, H·dv) -> context (B, Lq, H·dv): each head read and
// written where it sits (BlockPlace with heads = H)
Tensor attention_context_heads(const Tensor& q, const Tensor& k, const Tensor& v, std::size_t heads, float scale,
                               const Mask* masked, float fill, const Tensor& additive, float p, bool training,
                               Generator& gen) {
    constexpr const char* op = "attention_context_heads";
    for (const Tensor* t : {&q, &k, &v}) detail::require_defined(*t, op, "q, k and v");
    if (q.dim() != 3 || k.dim() != 3 || v.dim() != 3 || k.size(0) != q.size(0) || v.size(0) != q.size(0))
        fail("{}: q, k, v must be (batch, len, heads·d) with one batch, got {}, {}, {}", op, shape_str(q.shape()),
             shape_str(k.shape()), shape_str(v.shape()));
    if (heads == 0 || q.size(2) % heads != 0 || v.size(2) % heads != 0)
        fail("{}: widths {} (q, k) and {} (v) must be divisible by {} heads", op, q.size(2), v.size(2), heads);
    if (q.size(2) != k.size(2))
        fail("{}: query {} and key {} differ in the last dim (heads·d_k)", op, shape_str(q.shape()), shape_str(k.shape()));
    if (k.size(1) != v.size(1))
        fail("{}: key {} and value {} differ in length", op, shape_str(k.shape()), shape_str(v.shape()));
    check_dropout_probability(p, op);
    const std::size_t B = q.size(0), Lq = q.size(1), Lk = k.size(1), dk = q.size(2) / heads, dv = v.size(2) / heads;
    for (std::size_t n : {Lq, Lk, q.size(2), v.size(2)}) detail::to_blas_int(n, op);
    const ContextLayout l{{B * heads, Lq, Lk, autocast::dtype()},
                          {Lq, dk, heads}, {Lk, dk, heads}, {Lk, dv, heads}, {Lq, dv, heads},
                          {B, heads, Lq, Lk}, {B, Lq, heads * dv}};
    return context_node(q, k, v, l, scale, masked, fill, additive, p, training, gen, op);
}

}  // namespace xtgrad
