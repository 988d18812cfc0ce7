// Exercise 04's grader, on 16 seeded random cases: queries and keys of different counts, values
// narrower or wider than keys (dv != d), no mask, a causal mask or padded keys, against
// nn::scaled_dot_product_attention_composed (matmul_nt, masked_fill, softmax, matmul). Your dS
// first if you wrote it (the intermediate), then dv, dq, dk with the likely cause named, that only
// your node ran, then gradcheck. The square cases go first (a transposed product's cause is named
// there); stops at the first mismatch.
#include "exercise.hpp"
#include "diagnose.hpp"

#include <cmath>
#include <cstdlib>
#include <vector>

using namespace xtgrad;

TEST_SUITE_BEGIN("04_attention_backward");

namespace {

struct Case {
    std::size_t Lq, Lk, d, dv;
    int mask;  // 0 none, 1 causal (query i sees keys up to i + Lk − Lq), 2 the last key padding
    std::uint64_t seed;
};
Case case_of(std::uint64_t seed) {
    const std::size_t Lq = 1 + seed % 4, Lk = seed % 5 == 0 ? Lq : Lq + 1 + seed % 3;  // one in five square
    return {Lq, Lk, 2 + seed % 3, 1 + (seed * 2) % 4, static_cast<int>(seed % 3), 400 + seed};
}
std::string where(const Case& c) {
    return fmt::format("Lq {}, Lk {}, d {}, dv {}, {}, seed {}", c.Lq, c.Lk, c.d, c.dv,
                       std::vector<const char*>{"no mask", "a causal mask", "the last key padding"}[c.mask], c.seed);
}
struct Inputs {
    Array q, k, v, g;
    Mask masked;
    float scale;
};
Inputs inputs(const Case& c) {
    Inputs in{grading::random_tensor({c.Lq, c.d}, c.seed).data(), grading::random_tensor({c.Lk, c.d}, c.seed + 1).data(),
              grading::random_tensor({c.Lk, c.dv}, c.seed + 2).data(), grading::random_tensor({c.Lq, c.dv}, c.seed + 3).data(),
              xt::zeros<bool>({c.Lq, c.Lk}), 1.f / std::sqrt(static_cast<float>(c.d))};
    for (std::size_t i = 0; i < c.Lq; ++i)
        for (std::size_t j = 0; j < c.Lk; ++j)
            in.masked(i, j) = (c.mask == 1 && j > i + (c.Lk - c.Lq)) || (c.mask == 2 && j + 1 == c.Lk && c.Lk > 1);
    return in;
}
Array weights(const Inputs& in, bool with_mask = true) {
    nn::AttentionOptions o;
    o.scale = in.scale;
    if (with_mask) o.masked = &in.masked;
    return nn::scaled_dot_product_attention_composed(Tensor(in.q), Tensor(in.k), Tensor(in.v), o).weights.data();
}

// dS in the forms a wrong backward takes: the right one, without the −⟨dA, A⟩ term, without softmax.
Array dS_form(const Inputs& in, const Array& A, int form) {
    const std::size_t Lq = A.shape(0), Lk = A.shape(1);
    Array dA = xt::zeros<float>({Lq, Lk}), dS = dA;
    for (std::size_t i = 0; i < Lq; ++i) {
        double dot = 0;
        for (std::size_t j = 0; j < Lk; ++j) {
            for (std::size_t c = 0; c < in.v.shape(1); ++c) dA(i, j) += in.g(i, c) * in.v(j, c);
            dot += static_cast<double>(dA(i, j)) * A(i, j);
        }
        for (std::size_t j = 0; j < Lk; ++j)
            dS(i, j) = form == 2 ? dA(i, j) : A(i, j) * (dA(i, j) - (form == 0 ? static_cast<float>(dot) : 0.f));
    }
    return dS;
}
Array mm(const Array& a, const Array& b) { return matmul(Tensor(a), Tensor(b)).data(); }
Array tr(const Array& a) { return Array(xt::transpose(a)); }
// dq = dS k · scale and dk = dSᵀ q · scale for a given dS (a hypothesis's)
Array dq_of(const Inputs& in, const Array& dS) { return mm(dS, in.k) * in.scale; }
Array dk_of(const Inputs& in, const Array& dS) { return mm(tr(dS), in.q) * in.scale; }

std::string intermediate(std::uint64_t seed) {
    const Case c = case_of(seed);
    const Inputs in = inputs(c);
    const Array A = weights(in), mine = ex04::scores_grad(in.v, A, in.g);
    if (mine.dimension() == 0) return "";  // not written (an empty Array): optional
    return grading::diagnose("dS (scores_grad), " + where(c), mine, dS_form(in, A, 0), 1e-5,
                             {{"it is A ⊙ dA: the −⟨dA, A⟩ term of softmax's backward (exercise 02) is missing", dS_form(in, A, 1)},
                              {"it is dA = g vᵀ: softmax's backward is missing", dS_form(in, A, 2)}});
}

// dv's verdict: got against want = Aᵀ g, with the forms a wrong one takes.
std::string dv_verdict(const Case& c, const Inputs& in, const Array& got, const Array& want) {
    const Array A = weights(in);
    Array first_rows = want;  // dv with the rows of keys Lq.. left at 0
    for (std::size_t j = c.Lq; j < c.Lk; ++j)
        for (std::size_t col = 0; col < c.dv; ++col) first_rows(j, col) = 0;
    return grading::diagnose("d loss / d v, " + where(c), got, want, 1e-5,
                             {{"it is A g: dv = Aᵀ g", c.Lq == c.Lk ? mm(A, in.g) : Array()},
                              {"the rows of keys Lq and on are 0: a loop over the keys bounded by Lq, not Lk?",
                               c.Lk > c.Lq ? first_rows : Array()},
                              // a (.., 1) array reads its one column for any column index
                              {fmt::format("×d = ×{}: a loop over v's columns bounded by d, not dv (v is (Lk, dv))", c.d),
                               c.dv == 1 && c.d > 1 ? Array(want * static_cast<float>(c.d)) : Array()},
                              {"it uses weights computed without the mask: a masked key's weight is 0; use the A "
                               "attention_backward is given (or −∞ for the masked scores before the softmax)",
                               c.mask != 0 ? mm(tr(weights(in, false)), in.g) : Array()}});
}

std::string grads(std::uint64_t seed) {
    const Case c = case_of(seed);
    const Inputs in = inputs(c);
    Tensor mq(in.q, true), mk(in.k, true), mv(in.v, true), rq(in.q, true), rk(in.k, true), rv(in.v, true);
    {
        const Tensor out = ex04::attention(mq, mk, mv, in.masked, in.scale);
        if (std::string m = grading::only_yours_ran(grading::nodes_run([&] { out.backward(in.g); }), "AttentionBackward");
            !m.empty())
            return m;
    }
    nn::AttentionOptions o;
    o.scale = in.scale;
    o.masked = &in.masked;
    nn::scaled_dot_product_attention_composed(rq, rk, rv, o).context.backward(in.g);
    const Array A = weights(in);
    if (std::string m = dv_verdict(c, in, grading::grad_or_zeros(mv), rv.grad_array()); !m.empty()) return m;
    const char* const no_dot = "the −⟨dA, A⟩ term of softmax's backward (exercise 02) is missing from dS";
    const std::string no_scale = fmt::format("the scale is missing (S = q kᵀ · scale, so dq and dk carry it: ×√d = ×{:.4g})",
                                             1 / in.scale);
    const char* const no_softmax = "dS is dA = g vᵀ: softmax's backward is missing";
    const char* const no_A = "dS lacks the factor A: softmax's backward is A ⊙ (dA − ⟨dA, A⟩) (exercise 02)";
    Array dS_no_A = dS_form(in, A, 0);  // dA − ⟨dA, A⟩, 0 where masked
    for (std::size_t i = 0; i < c.Lq; ++i)
        for (std::size_t j = 0; j < c.Lk; ++j) dS_no_A(i, j) = A(i, j) > 0 ? dS_no_A(i, j) / A(i, j) : 0.f;
    if (std::string m = grading::diagnose("d loss / d q, " + where(c), grading::grad_or_zeros(mq), rq.grad_array(), 1e-5,
                                          {{no_dot, dq_of(in, dS_form(in, A, 1))},
                                           {no_softmax, dq_of(in, dS_form(in, A, 2))},
                                           {no_scale, Array(rq.grad_array() / in.scale)},
                                           {no_A, dq_of(in, dS_no_A)}});
        !m.empty())
        return m;
    return grading::diagnose("d loss / d k, " + where(c), grading::grad_or_zeros(mk), rk.grad_array(), 1e-5,
                             {{no_dot, dk_of(in, dS_form(in, A, 1))},
                              {no_scale, Array(rk.grad_array() / in.scale)},
                              {no_softmax, dk_of(in, dS_form(in, A, 2))},
                              {no_A, dk_of(in, dS_no_A)},
                              {"it is dS q · scale, shaped right only when square: dk = dSᵀ q · scale",
                               c.Lq == c.Lk ? dq_of(in, dS_form(in, A, 0)) : Array()}});
}

// The square cases (Lq == Lk) first: there a product with a transposed operand left out (dv = A g,
// dk = dS q) still has the right shape, so its cause can be named; with Lq != Lk it throws on the
// shapes or, written as loops, reads past A's rows, and no value says why.
template <class F>
std::string all_seeds(F&& f) {
    std::vector<std::uint64_t> order;
    for (int square = 1; square >= 0; --square)
        for (std::uint64_t seed = 1; seed <= 16; ++seed)
            if ((case_of(seed).Lq == case_of(seed).Lk) == static_cast<bool>(square)) order.push_back(seed);
    for (std::uint64_t seed : order) try {
            if (std::string m = f(seed); !m.empty()) return m;
        } catch (const std::exception& e) {  // named with its case: a throw may depend on the shapes
            return grading::threw(where(case_of(seed)), e);
        }
    return "";
}

}  // namespace

TEST_CASE("04_attention_backward: scores_grad, the intermediate dS (graded if you wrote it)") { GRADE(all_seeds(intermediate)); }

TEST_CASE("04_attention_backward: dv, dq, dk on 16 random cases (Lq != Lk, dv != d, masks), only your node") {
    GRADE(all_seeds(grads));
}

// The lesson's worked example (its trace and gdb walk stop here): 3 queries, 3 keys, d 2, causal.
TEST_CASE("04_attention_backward: dv, dq, dk with a causal mask (the lesson's 3×3 example)") {
    Inputs in{Tensor::from_vector({0.5f, -1.f, 1.f, 0.25f, -0.5f, 2.f}, {3, 2}).data(),
              Tensor::from_vector({1.f, 0.f, -1.f, 1.f, 0.5f, 0.5f}, {3, 2}).data(),
              Tensor::from_vector({1.f, 2.f, -1.f, 0.f, 3.f, -2.f}, {3, 2}).data(),
              Tensor::from_vector({1.f, -1.f, 0.5f, 2.f, -2.f, 1.f}, {3, 2}).data(), xt::zeros<bool>({3, 3}),
              1.f / std::sqrt(2.f)};
    for (std::size_t i = 0; i < 3; ++i)
        for (std::size_t j = i + 1; j < 3; ++j) in.masked(i, j) = true;
    Tensor mq(in.q, true), mk(in.k, true), mv(in.v, true), rq(in.q, true), rk(in.k, true), rv(in.v, true);
    try {
        ex04::attention(mq, mk, mv, in.masked, in.scale).backward(in.g);
    } catch (const std::exception& e) {
        GRADE(grading::threw("the lesson's example (Lq 3, Lk 3, d 2, dv 2, a causal mask)", e));
        return;
    }
    nn::AttentionOptions o;
    o.scale = in.scale;
    o.masked = &in.masked;
    nn::scaled_dot_product_attention_composed(rq, rk, rv, o).context.backward(in.g);
    std::string m = grading::diagnose("d loss / d v, the lesson's example", grading::grad_or_zeros(mv), rv.grad_array(), 1e-5,
                                      {{"it is A g: dv = Aᵀ g", mm(weights(in), in.g)}});
    if (m.empty()) m = grading::diagnose("d loss / d q, the lesson's example", grading::grad_or_zeros(mq), rq.grad_array(), 1e-5);
    if (m.empty()) m = grading::diagnose("d loss / d k, the lesson's example", grading::grad_or_zeros(mk), rk.grad_array(), 1e-5);
    GRADE(m);
}

TEST_CASE("04_attention_backward: gradcheck of q, k and v (Lq 2, Lk 4, masked)") {
    const Inputs in = inputs(case_of(7));
    try {
        const GradcheckResult r = gradcheck(
            [&in](const std::vector<Tensor>& t) { return ex04::attention(t[0], t[1], t[2], in.masked, in.scale); },
            {Tensor(in.q, true), Tensor(in.k, true), Tensor(in.v, true)});
        GRADE(r.passed ? "" : r.message());
    } catch (const std::exception& e) {
        GRADE(grading::threw(where(case_of(7)), e));
    }
}

// The grader's own check (exercises/check.sh runs it with XTGRAD_GRADER_SELF_TEST=1): dv from
// weights the learner recomputed from q and k without the mask is named as such.
TEST_CASE("grader_self_test: wrong answers, 04_attention_backward" *
          doctest::skip(std::getenv("XTGRAD_GRADER_SELF_TEST") == nullptr)) {
    const Case c = case_of(1);  // Lq 2, Lk 4, a causal mask
    const Inputs in = inputs(c);
    Array A = xt::zeros<float>({c.Lq, c.Lk}), dv = xt::zeros<float>({c.Lk, c.dv});
    for (std::size_t i = 0; i < c.Lq; ++i) {
        double total = 0;
        for (std::size_t j = 0; j < c.Lk; ++j) {
            double sij = 0;
            for (std::size_t t = 0; t < c.d; ++t) sij += static_cast<double>(in.q(i, t)) * in.k(j, t) * in.scale;
            A(i, j) = static_cast<float>(std::exp(sij));
            total += A(i, j);
        }
        for (std::size_t j = 0; j < c.Lk; ++j) A(i, j) = static_cast<float>(A(i, j) / total);
    }
    for (std::size_t j = 0; j < c.Lk; ++j)
        for (std::size_t t = 0; t < c.dv; ++t)
            for (std::size_t i = 0; i < c.Lq; ++i) dv(j, t) += A(i, j) * in.g(i, t);
    const std::string m = dv_verdict(c, in, dv, mm(tr(weights(in)), in.g));
    CHECK_MESSAGE(m.find("it uses weights computed without the mask") != std::string::npos, m);
    // dv = A g, A left untransposed: named on the first case graded, a square one
    std::string first;
    for (std::uint64_t seed = 1; seed <= 16 && first.empty(); ++seed)
        if (case_of(seed).Lq == case_of(seed).Lk) {
            const Inputs sq = inputs(case_of(seed));
            first = dv_verdict(case_of(seed), sq, mm(weights(sq), sq.g), mm(tr(weights(sq)), sq.g));
        }
    CHECK_MESSAGE(first.find("it is A g: dv = Aᵀ g") != std::string::npos, first);
}

TEST_SUITE_END();
