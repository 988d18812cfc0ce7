// Exercise 03's grader, on 12 seeded random inputs (1 to 4 rows of 2 to 7 features, shifted and
// scaled, some with a constant row: a padded position, std 0), against the same LayerNorm made of
// xtgrad's ops (nn::LayerNormUnbiased's forward: mean, stddev, -, /, *, +). dβ, dγ, dx in that
// order, each with the likely cause named; then gradcheck. Stops at the first mismatch.
#include "exercise.hpp"
#include "diagnose.hpp"

#include <cmath>
#include <cstdlib>

using namespace xtgrad;

TEST_SUITE_BEGIN("03_layer_norm_a");

namespace {
constexpr float kEps = 1e-6f;  // tutorial A's

struct Case {
    std::size_t rows, d;
    float scale, shift;
    bool constant_row;
    std::uint64_t seed;
};
Case case_of(std::uint64_t seed) {
    return {1 + seed % 4, 2 + (seed * 3) % 6, std::vector<float>{1.f, 0.5f, 4.f}[seed % 3], seed % 2 ? 0.f : 3.f,
            seed % 4 == 3, 300 + seed};
}
std::string where(const Case& c) {
    return fmt::format("x of shape ({},{}) drawn randn·{:g} + {:g}{}, seed {}", c.rows, c.d, c.scale, c.shift,
                       c.constant_row ? " with a constant first row" : "", c.seed);
}
struct Inputs {
    Tensor x, gamma, beta;
    Array g;
};
Inputs inputs(const Case& c) {
    Inputs in{grading::random_tensor({c.rows, c.d}, c.seed, c.scale), grading::random_tensor({c.d}, c.seed + 1),
              grading::random_tensor({c.d}, c.seed + 2), grading::random_tensor({c.rows, c.d}, c.seed + 3).data()};
    in.x.mutable_data() += c.shift;
    if (c.constant_row)
        for (std::size_t i = 0; i < c.d; ++i) in.x.mutable_data()(0, i) = 0.75f;
    return in;
}

// The LayerNorm composed of xtgrad's ops, right or in one of the forms a wrong backward takes.
enum class Variant { right, biased, eps_in_root, mean_constant, std_constant };
struct LnGrads {
    Array dx, dgamma, dbeta;
};
LnGrads composed(const Inputs& in, Variant v) {
    const Tensor x = in.x.detach().requires_grad_(true), gamma = in.gamma.detach().requires_grad_(true),
                 beta = in.beta.detach().requires_grad_(true);
    Tensor mu = mean(x, {-1}, true);
    if (v == Variant::mean_constant) mu = mu.detach();
    Tensor D = stddev(x, {-1}, v != Variant::biased, true) + kEps;
    if (v == Variant::eps_in_root) D = sqrt(var(x, {-1}, false, true) + kEps);
    if (v == Variant::std_constant) D = D.detach();
    (gamma * (x - mu) / D + beta).backward(in.g);
    return {x.grad_array(), gamma.grad_array(), beta.grad_array()};
}

// The two sums of a row, right or as a slip makes them (h without γ, x for u).
Array sums(const Inputs& in, bool with_gamma, bool centred) {
    const Array& x = in.x.data();
    Array out = xt::zeros<float>({x.shape(0), std::size_t{2}});
    for (std::size_t r = 0; r < x.shape(0); ++r) {
        double mu = 0, hm = 0, hu = 0;
        const double d = static_cast<double>(x.shape(1));
        for (std::size_t i = 0; i < x.shape(1); ++i) mu += x(r, i) / d;
        for (std::size_t i = 0; i < x.shape(1); ++i) {
            const double h = in.g(r, i) * (with_gamma ? in.gamma.data()(i) : 1.f);
            hm += h / d, hu += h * (x(r, i) - (centred ? mu : 0.0));
        }
        out(r, 0) = static_cast<float>(hm), out(r, 1) = static_cast<float>(hu);
    }
    return out;
}

std::string intermediate(std::uint64_t seed) {
    const Case c = case_of(seed);
    const Inputs in = inputs(c);
    const Array mine = ex03::row_sums(in.x.data(), in.gamma.data(), in.g);
    if (mine.dimension() == 0) return "";  // not written (Array()): optional
    const Array want = sums(in, true, true);
    const double scale = std::max(1.0, static_cast<double>(xt::amax(xt::abs(want))()));
    return grading::diagnose("row_sums (mean(h), Σ h u per row), " + where(c), mine, want, 1e-5 * scale,
                             {{"h is g alone: h = g ⊙ γ, the gradient reaching x̂", sums(in, false, true)},
                              {"Σ h x, not Σ h u: u = x − μ", sums(in, true, false)}});
}

// The shapes layer_norm_a_backward returns (exercise.hpp); the op's accumulate would sum a
// (rows, d) dγ for you, which hides a missing sum over the rows.
std::string shapes(const Case& c, const ex03::LayerNormGrads& got) {
    const Shape xs{c.rows, c.d}, ps{c.d};
    const std::pair<const char*, std::pair<const Array*, Shape>> parts[] = {
        {"dx", {&got.dx, xs}}, {"dgamma", {&got.dgamma, ps}}, {"dbeta", {&got.dbeta, ps}}};
    for (const auto& [name, p] : parts) {
        const Shape gs(p.first->shape().begin(), p.first->shape().end());
        if (gs == p.second) continue;
        std::string m = fmt::format("layer_norm_a_backward's {} has shape {} where {} was expected, {}", name, shape_str(gs),
                                    shape_str(p.second), where(c));
        if (p.second == ps && gs == xs)
            m += ": γ and β are used by every row, so their gradients add the rows' shares (the op's accumulate summed "
                 "them for you; the exercise is to sum them)";
        return m;
    }
    return "";
}

// dx's verdict, with the forms a wrong one takes; scale: the largest |dx| expected, for the tolerance.
std::string dx_verdict(const Case& c, const Inputs& in, const Array& got, const Array& want, double scale) {
    const Array no_std = composed(in, Variant::std_constant).dx;
    const char* const biased = "it is torch's LayerNorm's (biased std: d, not d − 1)";
    const char* const eps_in_root = "it is torch's LayerNorm's (ε inside the root, with the biased variance)";
    const float d_over = static_cast<float>(c.d - 1) / static_cast<float>(c.d);
    std::string m = grading::diagnose(
        "d loss / d x, " + where(c), got, want, 1e-4 * scale,
        {{biased, composed(in, Variant::biased).dx},
         {eps_in_root, composed(in, Variant::eps_in_root).dx},
         {"the path through μ is missing (every u_i depends on every x_k: subtract the mean of h)",
          composed(in, Variant::mean_constant).dx},
         {"the path through the std is missing (the −u · Σ h u term)", no_std},
         {"the path through the std has the wrong sign: it subtracts u · Σ h u / (D² (d − 1) s)", Array(2.f * no_std - want)},
         {"the path through the std divides by d, not d − 1: the unbiased std's derivative is u / ((d − 1) s)",
          Array(no_std + (want - no_std) * d_over)}});
    // 0/0 where the row is constant (u = 0, s = 0): said where it is, not only that it is
    bool row0_bad = false, rest_ok = true;
    if (!m.empty() && c.constant_row && got.shape() == want.shape())
        for (std::size_t r = 0; r < c.rows; ++r)
            for (std::size_t i = 0; i < c.d; ++i) {
                const bool finite = std::isfinite(got(r, i));
                if (r == 0) row0_bad = row0_bad || !finite;
                else rest_ok = rest_ok && finite;
            }
    if (row0_bad && rest_ok) {  // before the closing "(XTGRAD_REVEAL=1 …)" or "[there: …]"
        const std::size_t at = std::min(m.find(" (XTGRAD_REVEAL=1"), m.find(" [there:"));
        m.insert(std::min(at, m.size()), "; every NaN or inf is in the constant first row (u = 0, s = 0): there the std "
                                         "path's term is 0, not 0/0 (step 4 of the lesson)");
    }
    return m;
}

std::string check(std::uint64_t seed) {
    const Case c = case_of(seed);
    const Inputs in = inputs(c);
    if (std::string m = shapes(c, ex03::layer_norm_a_backward(in.x.data(), in.gamma.data(), in.g, kEps)); !m.empty()) return m;
    const Tensor x = in.x.detach().requires_grad_(true), gamma = in.gamma.detach().requires_grad_(true),
                 beta = in.beta.detach().requires_grad_(true);
    {
        const std::vector<std::string> ran =
            grading::nodes_run([&] { ex03::layer_norm_a(x, gamma, beta, kEps).backward(in.g); });
        if (std::string m = grading::only_yours_ran(ran, "LayerNormABackward"); !m.empty()) return m;
    }
    const LnGrads want = composed(in, Variant::right);
    // dx is ~1e6 on a constant row (its std is only ε): a tolerance relative to the largest
    const double scale = std::max(1.0, static_cast<double>(xt::amax(xt::abs(want.dx))()));
    // = in place of +=: only the last row's share is left
    const auto last_row = [&](const Array& a) {
        Array row = xt::zeros<float>({c.d});
        for (std::size_t i = 0; i < c.d; ++i) row(i) = a(c.rows - 1, i);
        return row;
    };
    const Array xhat = ((in.x - mean(in.x, {-1}, true)) / (stddev(in.x, {-1}, true, true) + kEps)).data();
    const char* const last_only = "it is the last row's share alone: γ and β are used by every row, so add (+=) each row's";
    if (std::string m = grading::diagnose("d loss / d beta, " + where(c), grading::grad_or_zeros(beta), want.dbeta, 1e-5,
                                          {{last_only, c.rows > 1 ? last_row(in.g) : Array()}});
        !m.empty())
        return m;
    const char* const biased = "it is torch's LayerNorm's (biased std: d, not d − 1)";
    const char* const eps_in_root = "it is torch's LayerNorm's (ε inside the root, with the biased variance)";
    if (std::string m = grading::diagnose("d loss / d gamma, " + where(c), grading::grad_or_zeros(gamma), want.dgamma,
                                          1e-5 * scale,
                                          {{"it uses x, not x̂ = (x − μ)/(s + ε)", Array(xt::sum(in.g * in.x.data(), {0}))},
                                           {"it is multiplied by γ: h = g ⊙ γ is for dx; dγ = Σ g ⊙ x̂",
                                            Array(want.dgamma * in.gamma.data())},
                                           {last_only, c.rows > 1 ? last_row(Array(in.g * xhat)) : Array()},
                                           {biased, composed(in, Variant::biased).dgamma},
                                           {eps_in_root, composed(in, Variant::eps_in_root).dgamma}});
        !m.empty())
        return m;
    return dx_verdict(c, in, grading::grad_or_zeros(x), want.dx, scale);
}

// The first message of seeds 1..12, a throw named with its case.
template <class F>
std::string all_seeds(F&& f) {
    for (std::uint64_t seed = 1; seed <= 12; ++seed) try {
            if (std::string m = f(seed); !m.empty()) return m;
        } catch (const std::exception& e) {
            return grading::threw(where(case_of(seed)), e);
        }
    return "";
}

}  // namespace

TEST_CASE("03_layer_norm_a: the forward (given) matches the composition") {
    const Inputs in = inputs(case_of(1));
    const Tensor want = in.gamma * (in.x - mean(in.x, {-1}, true)) / (stddev(in.x, {-1}, true, true) + kEps) + in.beta;
    GRADE(grading::diagnose("layer_norm_a(x) values", ex03::layer_norm_a(in.x, in.gamma, in.beta, kEps).data(), want.data(), 1e-5));
}

TEST_CASE("03_layer_norm_a: row_sums, the intermediate sums (graded if you wrote them)") {
    GRADE(all_seeds(intermediate));
}

TEST_CASE("03_layer_norm_a: dβ, dγ, dx on 12 random inputs (constant rows among them)") {
    GRADE(all_seeds(check));
}

// The lesson's worked example (its trace and gdb walk stop here): x, γ, β and g fixed.
TEST_CASE("03_layer_norm_a: dgamma, dbeta, dx on the lesson's 3×3 x") {
    Inputs in{Tensor::from_vector({1.f, 2.f, 4.f, -1.f, 0.5f, 0.f, 3.f, 1.f, 2.f}, {3, 3}),
              Tensor::from_vector({1.5f, -0.5f, 2.f}, {3}), Tensor::from_vector({0.1f, 0.2f, -0.3f}, {3}),
              Tensor::from_vector({1.f, -2.f, 0.5f, 0.f, 1.f, 3.f, -1.f, 2.f, 1.f}, {3, 3}).data()};
    const Tensor x = in.x.detach().requires_grad_(true), gamma = in.gamma.detach().requires_grad_(true),
                 beta = in.beta.detach().requires_grad_(true);
    try {
        ex03::layer_norm_a(x, gamma, beta, kEps).backward(in.g);
    } catch (const std::exception& e) {
        GRADE(grading::threw("the lesson's x (3,3)", e));
        return;
    }
    const LnGrads want = composed(in, Variant::right);
    std::string m = grading::diagnose("d loss / d beta, the lesson's x", grading::grad_or_zeros(beta), want.dbeta, 1e-5);
    if (m.empty()) m = grading::diagnose("d loss / d gamma, the lesson's x", grading::grad_or_zeros(gamma), want.dgamma, 1e-5);
    if (m.empty()) m = grading::diagnose("d loss / d x, the lesson's x", grading::grad_or_zeros(x), want.dx, 1e-4);
    GRADE(m);
}

TEST_CASE("03_layer_norm_a: gradcheck of x, gamma and beta") {
    const Inputs in = inputs(case_of(1));
    try {
        const GradcheckResult r = gradcheck([](const std::vector<Tensor>& v) { return ex03::layer_norm_a(v[0], v[1], v[2], kEps); },
                                            {in.x.detach().requires_grad_(true), in.gamma.detach().requires_grad_(true),
                                             in.beta.detach().requires_grad_(true)});
        GRADE(r.passed ? "" : r.message());
    } catch (const std::exception& e) {
        GRADE(grading::threw("gradcheck's inputs, " + where(case_of(1)), e));
    }
}

// The grader's own check (exercises/check.sh runs it with XTGRAD_GRADER_SELF_TEST=1): wrong
// answers written the way a learner slips, each named.
TEST_CASE("grader_self_test: wrong answers, 03_layer_norm_a" * doctest::skip(std::getenv("XTGRAD_GRADER_SELF_TEST") == nullptr)) {
    // dx with d in the std path's denominator (on_const: 0 there), and with 0/0 on a constant row
    const auto slipped = [](const Inputs& in, bool d_slip) {
        const Array& x = in.x.data();
        const std::size_t rows = x.shape(0), d = x.shape(1);
        Array dx = xt::zeros<float>(x.shape());
        for (std::size_t r = 0; r < rows; ++r) {
            double mu = 0, ss = 0, hm = 0, hu = 0;
            for (std::size_t i = 0; i < d; ++i) mu += x(r, i) / static_cast<double>(d);
            for (std::size_t i = 0; i < d; ++i) {
                const double u = x(r, i) - mu, h = in.g(r, i) * in.gamma.data()(i);
                ss += u * u, hm += h / static_cast<double>(d), hu += h * u;
            }
            const double s = std::sqrt(ss / static_cast<double>(d - 1)), D = s + kEps;
            const double through_std = d_slip ? (s > 0 ? hu / (D * D * static_cast<double>(d) * s) : 0.0)
                                              : hu / (D * D * static_cast<double>(d - 1) * s);
            for (std::size_t k = 0; k < d; ++k)
                dx(r, k) = static_cast<float>((in.g(r, k) * in.gamma.data()(k) - hm) / D - (x(r, k) - mu) * through_std);
        }
        return dx;
    };
    const auto verdict = [&](std::uint64_t seed, bool d_slip) {
        const Case c = case_of(seed);
        const Inputs in = inputs(c);
        const LnGrads want = composed(in, Variant::right);
        return dx_verdict(c, in, slipped(in, d_slip), want.dx, std::max(1.0, static_cast<double>(xt::amax(xt::abs(want.dx))())));
    };
    std::string m = verdict(1, true);
    CHECK_MESSAGE(m.find("the path through the std divides by d, not d − 1") != std::string::npos, m);
    m = verdict(3, false);  // (4,5), a constant first row
    CHECK_MESSAGE(m.find("every NaN or inf is in the constant first row") != std::string::npos, m);
    // dγ left per row: (rows, d)
    const Case c = case_of(3);
    const Inputs in = inputs(c);
    m = shapes(c, {Array(in.x.data()), Array(in.g * in.x.data()), Array(xt::zeros<float>({c.d}))});
    CHECK_MESSAGE(m.find("layer_norm_a_backward's dgamma has shape (4,5) where (5) was expected") == 0, m);
    CHECK_MESSAGE(m.find("their gradients add the rows' shares") != std::string::npos, m);
}

TEST_SUITE_END();
