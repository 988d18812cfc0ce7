// cross_entropy on logits, fused with its log-softmax (F.cross_entropy, mean reduction).
//   logits (N, C), target (N) int64
//   loss_i = (1 - ε) (-log p[i, t_i]) + ε · mean_c(-log p[i, c]),   p = softmax(logits_i)
//   loss   = mean of loss_i over rows with t_i != ignore_index
// Backward of a kept row: (p - (1 - ε) onehot(t_i) - ε / C) / n_kept; ignored rows get 0.
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/autograd/ops/common.hpp>
#include <xtgrad/autograd/ops/softmax.hpp>
#include <xtgrad/simd/vector_kernels.hpp>
#include <xtgrad/threads/parallel.hpp>

#include <cmath>
#include <memory>
#include <vector>

namespace xtgrad {

namespace {
// The smoothed target distribution q (N, C), (1 - ε) onehot(t_i) + ε / C on a kept row, and
// 1 / kept on the kept rows (N, 1), 0 on ignored ones: d loss / d logits = (p - q) · weight.
struct TargetDist {
    Tensor q, weight;
};
TargetDist target_dist(const Ids& targets, long ignore_index, float eps, std::size_t kept, std::size_t N, std::size_t C) {
    Array q = xt::zeros<float>(Shape{N, C});
    Array w = xt::zeros<float>(Shape{N, 1});
    for (std::size_t i = 0; i < N; ++i) {
        const std::int64_t t = targets.data()[i];
        if (t == ignore_index) continue;
        w(i, 0) = 1.f / static_cast<float>(kept);
        for (std::size_t c = 0; c < C; ++c) q(i, c) = eps / static_cast<float>(C);
        q(i, static_cast<std::size_t>(t)) += 1.f - eps;
    }
    return {Tensor(std::move(q)), Tensor(std::move(w))};
}
}  // namespace

Tensor cross_entropy(Tensor logits, const Ids& target, long ignore_index, float label_smoothing) {
    detail::require_defined(logits, "cross_entropy", "the logits");
    if (logits.dim() != 2) fail("cross_entropy: logits must be 2-D (N, C), got {}", shape_str(logits.shape()));
    const std::size_t N = logits.size(0), C = logits.size(1);
    if (target.dimension() != 1 || target.size() != N)
        fail("cross_entropy: target of shape {} does not match logits {}: expected ({})", shape_str(target.shape()),
             shape_str(logits.shape()), N);
    if (!(label_smoothing >= 0.f && label_smoothing <= 1.f))
        fail("cross_entropy: label_smoothing must be in [0, 1], got {}", label_smoothing);
    std::size_t kept = 0;
    for (std::size_t i = 0; i < N; ++i) {
        const std::int64_t t = target.data()[i];
        if (t == ignore_index) continue;
        if (t < 0 || t >= static_cast<std::int64_t>(C))
            fail("cross_entropy: target {} at row {} is out of range for {} classes", t, i, C);
        ++kept;
    }
    if (kept == 0) fail("cross_entropy: all {} targets equal ignore_index {}; the mean loss is undefined", N, ignore_index);

    // probabilities, kept for backward: written over the logits when they are a temporary (or
    // std::move(t)) nothing else holds, as each row is read before it is written
    // (not while a dual level is active: the jvp rule reads the logits)
    const bool in_place = detail::can_take_values(logits) && !detail::forward_active();
    Array prob = in_place ? std::move(logits).take_array() : empty_array({N, C});
    const float* logit_rows = in_place ? prob.data() : logits.ptr();
    const float eps = label_smoothing;
    // Rows split over xtgrad's pool; each row's loss is kept and the mean summed in row order
    // afterwards, so the loss is the same for any thread count.
    std::vector<double> row_loss(N, 0.0);
    parallel_rows(N, C, [&](std::size_t i0, std::size_t i1) {
        for (std::size_t i = i0; i < i1; ++i) {
            const float* x = logit_rows + i * C;  // may be p itself: x[c] is read before p[c] is written
            float* p = prob.data() + i * C;
            const std::int64_t t = target.data()[i];
            const float x_target = t == ignore_index ? 0.f : x[t];
            float mx = x[0];
            for (std::size_t c = 1; c < C; ++c) mx = std::max(mx, x[c]);
            double sum_x = 0;  // the smoothing term's, read before p overwrites x
            if (eps != 0.f)
                for (std::size_t c = 0; c < C; ++c) sum_x += x[c];
            // exp(x - max) into p, summed: softmax's vector kernel (a scalar std::exp per logit
            // and a double division each took ~3 % of tutorial B's inference over 5000 classes)
            const double s = vec::exp_shifted_sum(x, p, C, mx, true);
            const double lse = mx + std::log(s);
            const float inv = static_cast<float>(1.0 / s);
            for (std::size_t c = 0; c < C; ++c) p[c] *= inv;
            if (t == ignore_index) continue;
            // The smoothing term only when it is used: a -inf logit makes it +inf, and 0 · inf
            // would be NaN where torch's loss is finite (at ε = 0) or +inf.
            const double nll = lse - x_target;
            row_loss[i] = eps == 0.f ? nll : (1.0 - eps) * nll + eps * (lse - sum_x / static_cast<double>(C));
        }
    });
    double total = 0;
    for (std::size_t i = 0; i < N; ++i)
        if (target.data()[i] != ignore_index) total += row_loss[i];
    Array out = Array::from_shape({});
    out() = static_cast<float>(total / static_cast<double>(kept));
    // no torch node to copy names from (torch composes log_softmax and nll_loss): the softmax of
    // the logits is "probs", the targets "target" (nll_loss's name)
    return detail::with_jvp(differentiable(make_result(std::move(out), "CrossEntropyBackward", {logits}, {{"probs", std::move(prob)}, {"target", target}},
                       [ignore_index, eps, kept, N, C](Node& self, const Array& g) {
                           const Ids& targets = self.saved_ids("target");
                           // dx (N, C): row i is (p_i - (1 - ε) onehot(t_i) - ε / C) · scale, 0 if ignored
                           const float scale = g.data()[0] / static_cast<float>(kept);
                           auto rows = [&](const float* probs, float* dx, auto store) {
                               parallel_rows(N, C, [&](std::size_t i0, std::size_t i1) {
                                   for (std::size_t i = i0; i < i1; ++i) {
                                       const std::int64_t t = targets.data()[i];
                                       float* d = dx + i * C;
                                       const float* p = probs + i * C;  // may be d itself: p[c] read before d[c] written
                                       const bool ignored = t == ignore_index;
                                       for (std::size_t c = 0; c < C; ++c) {
                                           const float v = (p[c] - eps / static_cast<float>(C)) * scale;
                                           const bool target = static_cast<std::int64_t>(c) == t;
                                           store(d[c], ignored ? 0.f : target ? v - (1.f - eps) * scale : v);
                                       }
                                   }
                               });
                           };
                           if (Array* probs = self.take_saved("probs")) {  // their last use: dx over them
                               rows(probs->data(), probs->data(), Assign{});
                               self.accumulate(0, std::move(*probs));
                               return;
                           }
                           const Array& probs = self.saved("probs");
                           self.grad_out(0, {N, C}).write([&](float* dx, auto store) { rows(probs.data(), dx, store); });
                       }),
        // in ops: dx = (p - (1 - ε) onehot(t) - ε / C) · g / kept on the rows not ignored, with p the
        // saved probabilities made softmax(logits) of the graph again (attach_softmax)
        [ignore_index, eps, kept, N, C](const Node& self, const Tensor& g) -> Grads {
            const TargetDist q = target_dist(self.saved_ids("target"), ignore_index, eps, kept, N, C);
            const Tensor p = attach_softmax(Tensor(self.saved("probs")), self.input(0), 1, false);
            return {mul(sub(p, q.q), mul(g, q.weight))};
        }),
        // jvp: Σ (p - q) · weight · t, p = softmax(logits) recomputed in ops (the fused kernel's p is
        // not a tensor of the graph)
        {&logits}, [&](const detail::Tangents& t) {
            const TargetDist q = target_dist(target, ignore_index, eps, kept, N, C);
            return sum(mul(mul(sub(softmax(logits, 1), q.q), q.weight), t[0]));
        });
}

}  // namespace xtgrad
