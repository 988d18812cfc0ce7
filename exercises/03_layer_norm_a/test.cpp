// Exercise 03's grader, on 12 seeded random inputs (1 to 4 rows of 2 to 7 features, shifted and
// scaled, some with a constant row: a padded position, std 0), against the same LayerNorm made of
// xtgrad's ops (nn::LayerNormUnbiased's forward: mean, stddev, -, /, *, +). dβ, dγ, dx in that
// order, each with the likely cause named; then gradcheck. Stops at the first mismatch.
#include "exercise.hpp"
#include "diagnose.hpp"

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

std::string check(std::uint64_t seed) {
    const Case c = case_of(seed);
    const Inputs in = inputs(c);
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
    return grading::diagnose(
        "d loss / d x, " + where(c), grading::grad_or_zeros(x), want.dx, 1e-4 * scale,
        {{biased, composed(in, Variant::biased).dx},
         {eps_in_root, composed(in, Variant::eps_in_root).dx},
         {"the path through μ is missing (every u_i depends on every x_k: subtract the mean of h)",
          composed(in, Variant::mean_constant).dx},
         {"the path through the std is missing (the −u · Σ h u term)", composed(in, Variant::std_constant).dx},
         {"the path through the std has the wrong sign: it subtracts u · Σ h u / (D² (d − 1) s)",
          Array(2.f * composed(in, Variant::std_constant).dx - want.dx)}});
}

}  // namespace

TEST_CASE("03_layer_norm_a: the forward (given) matches the composition") {
    const Inputs in = inputs(case_of(1));
    const Tensor want = in.gamma * (in.x - mean(in.x, {-1}, true)) / (stddev(in.x, {-1}, true, true) + kEps) + in.beta;
    GRADE(grading::diagnose("layer_norm_a(x) values", ex03::layer_norm_a(in.x, in.gamma, in.beta, kEps).data(), want.data(), 1e-5));
}

TEST_CASE("03_layer_norm_a: row_sums, the intermediate sums (graded if you wrote them)") {
    std::string m;
    for (std::uint64_t seed = 1; seed <= 12 && m.empty(); ++seed) m = intermediate(seed);
    GRADE(m);
}

TEST_CASE("03_layer_norm_a: dβ, dγ, dx on 12 random inputs (constant rows among them)") {
    std::string m;
    for (std::uint64_t seed = 1; seed <= 12 && m.empty(); ++seed) m = check(seed);
    GRADE(m);
}

// The lesson's worked example (its trace and gdb walk stop here): x, γ, β and g fixed.
TEST_CASE("03_layer_norm_a: dgamma, dbeta, dx on the lesson's 3×3 x") {
    Inputs in{Tensor::from_vector({1.f, 2.f, 4.f, -1.f, 0.5f, 0.f, 3.f, 1.f, 2.f}, {3, 3}),
              Tensor::from_vector({1.5f, -0.5f, 2.f}, {3}), Tensor::from_vector({0.1f, 0.2f, -0.3f}, {3}),
              Tensor::from_vector({1.f, -2.f, 0.5f, 0.f, 1.f, 3.f, -1.f, 2.f, 1.f}, {3, 3}).data()};
    const Tensor x = in.x.detach().requires_grad_(true), gamma = in.gamma.detach().requires_grad_(true),
                 beta = in.beta.detach().requires_grad_(true);
    ex03::layer_norm_a(x, gamma, beta, kEps).backward(in.g);
    const LnGrads want = composed(in, Variant::right);
    std::string m = grading::diagnose("d loss / d beta, the lesson's x", grading::grad_or_zeros(beta), want.dbeta, 1e-5);
    if (m.empty()) m = grading::diagnose("d loss / d gamma, the lesson's x", grading::grad_or_zeros(gamma), want.dgamma, 1e-5);
    if (m.empty()) m = grading::diagnose("d loss / d x, the lesson's x", grading::grad_or_zeros(x), want.dx, 1e-4);
    GRADE(m);
}

TEST_CASE("03_layer_norm_a: gradcheck of x, gamma and beta") {
    const Inputs in = inputs(case_of(1));
    const GradcheckResult r = gradcheck([](const std::vector<Tensor>& v) { return ex03::layer_norm_a(v[0], v[1], v[2], kEps); },
                                        {in.x.detach().requires_grad_(true), in.gamma.detach().requires_grad_(true),
                                         in.beta.detach().requires_grad_(true)});
    GRADE(r.passed ? "" : r.message());
}

TEST_SUITE_END();
