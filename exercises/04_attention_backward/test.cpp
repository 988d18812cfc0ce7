// Exercise 04's grader: your backward against nn::scaled_dot_product_attention's (the
// composition of matmul_nt, masked_fill, softmax and matmul), with a causal mask.
#include "exercise.hpp"
#include "grading.hpp"

#include <cmath>

using namespace xtgrad;

TEST_SUITE_BEGIN("04_attention_backward");

namespace {
constexpr std::size_t Lq = 3, Lk = 3, d = 2;
struct Inputs {
    Tensor q = Tensor::from_vector({0.5f, -1.f, 1.f, 0.25f, -0.5f, 2.f}, {Lq, d}, true);
    Tensor k = Tensor::from_vector({1.f, 0.f, -1.f, 1.f, 0.5f, 0.5f}, {Lk, d}, true);
    Tensor v = Tensor::from_vector({1.f, 2.f, -1.f, 0.f, 3.f, -2.f}, {Lk, d}, true);
};
Mask causal() {  // query i sees keys 0..i
    Mask m = xt::zeros<bool>({Lq, Lk});
    for (std::size_t i = 0; i < Lq; ++i)
        for (std::size_t j = i + 1; j < Lk; ++j) m(i, j) = true;
    return m;
}
const float kScale = 1.f / std::sqrt(static_cast<float>(d));
Array upstream() { return Tensor::from_vector({1.f, -1.f, 0.5f, 2.f, -2.f, 1.f}, {Lq, d}).data(); }
Tensor reference(const Inputs& in, const Mask& mask) {
    nn::AttentionOptions o;
    o.scale = kScale;
    o.masked = &mask;
    return nn::scaled_dot_product_attention_composed(in.q, in.k, in.v, o).context;
}
}  // namespace

TEST_CASE("04_attention_backward: dv, dq, dk with a causal mask") {
    const Mask mask = causal();
    Inputs mine, ref;
    ex04::attention(mine.q, mine.k, mine.v, mask, kScale).backward(upstream());
    reference(ref, mask).backward(upstream());
    GRADE_CLOSE("d loss / d v", grading::grad_or_zeros(mine.v), ref.v.grad_array(), 1e-5);
    GRADE_CLOSE("d loss / d q", grading::grad_or_zeros(mine.q), ref.q.grad_array(), 1e-5);
    GRADE_CLOSE("d loss / d k", grading::grad_or_zeros(mine.k), ref.k.grad_array(), 1e-5);
}

TEST_CASE("04_attention_backward: gradcheck of q, k and v") {
    const Mask mask = causal();
    Inputs in;
    GRADE_GRADCHECK(gradcheck(
        [&mask](const std::vector<Tensor>& t) { return ex04::attention(t[0], t[1], t[2], mask, kScale); },
        {in.q, in.k, in.v}));
}

// Queries and keys of different counts, values narrower than keys: a loop over the keys bounded
// by Lq (or over v's columns bounded by d) passes every square case and fails here.
TEST_CASE("04_attention_backward: not square: 2 queries, 5 keys (the last one padding), d 3, dv 2") {
    constexpr std::size_t nq = 2, nk = 5, dk = 3, dv = 2;
    Mask padding = xt::zeros<bool>({nq, nk});
    for (std::size_t i = 0; i < nq; ++i) padding(i, nk - 1) = true;
    const float scale = 1.f / std::sqrt(static_cast<float>(dk));
    Generator gen(404);
    const Array q = randn({nq, dk}, gen).data(), k = randn({nk, dk}, gen).data(), v = randn({nk, dv}, gen).data();
    const Array g = randn({nq, dv}, gen).data();
    Tensor mq(q, true), mk(k, true), mv(v, true), rq(q, true), rk(k, true), rv(v, true);
    ex04::attention(mq, mk, mv, padding, scale).backward(g);
    nn::AttentionOptions o;
    o.scale = scale;
    o.masked = &padding;
    nn::scaled_dot_product_attention_composed(rq, rk, rv, o).context.backward(g);
    GRADE_CLOSE("d loss / d v (Lq 2, Lk 5)", grading::grad_or_zeros(mv), rv.grad_array(), 1e-5);
    GRADE_CLOSE("d loss / d q (Lq 2, Lk 5)", grading::grad_or_zeros(mq), rq.grad_array(), 1e-5);
    GRADE_CLOSE("d loss / d k (Lq 2, Lk 5)", grading::grad_or_zeros(mk), rk.grad_array(), 1e-5);
}

TEST_SUITE_END();
