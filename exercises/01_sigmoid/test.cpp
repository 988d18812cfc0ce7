// Exercise 01's grader, on 12 seeded random inputs (shapes and scales vary with the seed): your
// op's node, its values, its gradient (with the likely cause named), the far left tail where
// finite differences in float cannot keep up, then gradcheck. Each test stops at the first
// mismatch and waits for the ones before.
#include "exercise.hpp"
#include "diagnose.hpp"

#include <cmath>
#include <functional>

using namespace xtgrad;

TEST_SUITE_BEGIN("01_sigmoid");

namespace {

struct Case {
    Shape shape;
    float scale;
    std::uint64_t seed;
};
Case case_of(std::uint64_t seed) {
    return {{1 + seed % 4, 1 + (seed * 7) % 6}, std::vector<float>{1.f, 3.f, 8.f}[seed % 3], 100 + seed};
}
std::string where(const Case& c) {
    return fmt::format("x of shape {} drawn randn·{:g}, seed {}", shape_str(c.shape), c.scale, c.seed);
}
Array sigma(const Array& x) { return 1.f / (1.f + xt::exp(-x)); }
using Sigmoid = std::function<Tensor(const Tensor&)>;
const Sigmoid yours = [](const Tensor& x) { return ex01::sigmoid(x); };

// The forms a wrong backward usually takes, for x's values xa and the upstream g.
std::vector<grading::Hypothesis> wrong_backwards(const Array& xa, const Array& g) {
    const Array s = sigma(xa);
    return {{"it is g ⊙ σ: the factor (1 − σ) is missing", Array(g * s)},
            {"it is g ⊙ (1 − σ): the factor σ is missing", Array(g * (1.f - s))},
            {"it is σ(1 − σ) without g: the chain rule multiplies by the gradient that arrived", Array(s * (1.f - s))},
            {"it is g ⊙ x(1 − x): σ' = σ(1 − σ) with σ the output, not the input x", Array(g * xa * (1.f - xa))}};
}

std::string node(std::uint64_t seed) {
    const Case c = case_of(seed);
    const Tensor x = grading::random_tensor(c.shape, c.seed, c.scale).requires_grad_(true);
    const Tensor y = ex01::sigmoid(x);
    if (!y.grad_fn()) return "sigmoid(x) has no node: it must come from make_result (or attach_grad_fn)";
    if (y.grad_fn()->op() != "SigmoidBackward")
        return fmt::format("sigmoid(x)'s node is {}, not your SigmoidBackward: the exercise is an op with a node of its "
                           "own, not a composition of xtgrad's ops",
                           y.grad_fn()->op());
    const auto& in = y.grad_fn()->inputs();
    if (in.size() != 1 || in[0].get() != x.impl())
        return "SigmoidBackward's inputs are not {x}: its one edge goes to x itself";
    return grading::only_yours_ran(grading::nodes_run([&] { y.backward(Array(xt::ones<float>(c.shape))); }),
                                   "SigmoidBackward");
}

std::string values(std::uint64_t seed, const Sigmoid& f = yours) {
    const Case c = case_of(seed);
    const Tensor x = grading::random_tensor(c.shape, c.seed, c.scale);
    const Array before = x.data();
    const Array got = f(x).data();  // before the reference reads x: a write into x must not hide
    if (std::string m = grading::input_changed("sigmoid(x), " + where(c) + ",", before, x.data()); !m.empty()) return m;
    return grading::diagnose("sigmoid(x) values, " + where(c), got, sigma(before), 1e-6,
                             {{"it is σ(−x): the sign in the exponent", sigma(Array(-before))}});
}

std::string gradient(std::uint64_t seed) {
    const Case c = case_of(seed);
    const Tensor x = grading::random_tensor(c.shape, c.seed, c.scale).requires_grad_(true);
    const Array g = grading::random_tensor(c.shape, c.seed + 1000).data();  // not ones: a backward that ignores g shows
    ex01::sigmoid(x).backward(g);
    Tensor ref = x.detach().requires_grad_(true);
    (1.f / (1.f + exp(-ref))).backward(g);
    return grading::diagnose("d loss / d x, " + where(c), grading::grad_or_zeros(x), ref.grad_array(), 1e-6,
                             wrong_backwards(x.data(), g));
}

// x from −30 to −12: σ' runs from 1e-13 to 6e-6. The formula gets it to float's precision; a
// gradient taken by finite differences in float cannot (the two values it subtracts agree in
// nearly every digit), so the tolerance is relative to each element's size.
std::string tail() {
    const Tensor x = Tensor(Array(xt::linspace<float>(-30.f, -12.f, 10))).requires_grad_(true);
    ex01::sigmoid(x).backward(Array(xt::ones<float>({10})));
    const Array s = sigma(x.data()), want = s * (1.f - s), got = grading::grad_or_zeros(x);
    for (std::size_t i = 0; i < 10; ++i)
        if (!(std::abs(got(i) - want(i)) <= 1e-5 * want(i)))
            return fmt::format("d σ / d x at x = {:.4g} (the left tail, where σ' = {:.3g}): off by {:.3g} of its size; a "
                               "numerical gradient cannot resolve it there: write σ(1 − σ) from the saved output",
                               x.data()(i), want(i), std::abs(got(i) - want(i)) / want(i));
    return "";
}

template <class F>
std::string all_seeds(F&& f) {
    for (std::uint64_t seed = 1; seed <= 12; ++seed)
        try {
            if (std::string m = f(seed); !m.empty()) return m;
        } catch (const std::exception& e) {  // named with its case: a throw may depend on the input
            return fmt::format("sigmoid on {} threw: {}", where(case_of(seed)), e.what());
        }
    return "";
}
std::string all_values() {
    return all_seeds([](std::uint64_t seed) { return values(seed); });
}
const char* const wait = "not graded until the values are right (above)";

}  // namespace

TEST_CASE("01_sigmoid: forward values, 12 random inputs") { GRADE(all_values()); }

TEST_CASE("01_sigmoid: your node, and only yours, runs when the gradient flows") { GRADE(all_seeds(node)); }

TEST_CASE("01_sigmoid: d (sum(sigmoid(x) * g)) / d x, 12 random inputs and the far tail") {
    std::string m = all_values().empty() ? all_seeds(gradient) : wait;
    GRADE(m.empty() ? tail() : m);
}

// The lesson's worked example (its gdb walk stops here): x and g fixed.
TEST_CASE("01_sigmoid: backward on the lesson's x (2,3)") {
    const Tensor x = Tensor::from_vector({-3.f, -1.f, -0.25f, 0.f, 0.5f, 2.f}, {2, 3}, true), ref = x.detach().requires_grad_(true);
    const Array g = Tensor::from_vector({1.f, -2.f, 0.5f, 3.f, -1.f, 0.25f}, {2, 3}).data();
    std::string m = all_values().empty() ? "" : wait;
    if (m.empty()) try {
            ex01::sigmoid(x).backward(g);
            (1.f / (1.f + exp(-ref))).backward(g);
            m = grading::diagnose("d loss / d x, the lesson's x", grading::grad_or_zeros(x), ref.grad_array(), 1e-6,
                                  wrong_backwards(x.data(), g));
        } catch (const std::exception& e) {
            m = fmt::format("backward on the lesson's x threw: {}", e.what());
        }
    GRADE(m);
}

TEST_CASE("01_sigmoid: gradcheck (finite differences agree with your backward)") {
    try {
        const GradcheckResult r = gradcheck([](const std::vector<Tensor>& v) { return ex01::sigmoid(v[0]); },
                                            {grading::random_tensor({2, 3}, 7).requires_grad_(true)});
        GRADE(r.passed ? "" : r.message());
    } catch (const std::exception& e) {
        GRADE(fmt::format("gradcheck on x of shape (2,3) drawn randn, seed 7: your sigmoid threw: {}", e.what()));
    }
}

// The grader's own check (exercises/check.sh runs it with XTGRAD_GRADER_SELF_TEST=1): a forward
// that writes σ into x is named as such, not as a wrong backward (the reference read the new x).
TEST_CASE("grader_self_test: wrong answers, 01_sigmoid" * doctest::skip(std::getenv("XTGRAD_GRADER_SELF_TEST") == nullptr)) {
    const Sigmoid in_place = [](const Tensor& x) {
        Tensor alias = x;  // shares x's values
        alias.mutable_data() = sigma(x.data());
        return Tensor(Array(x.data()));
    };
    const std::string m = values(1, in_place);
    CHECK_MESSAGE(m.find("sigmoid(x), x of shape (2,2) drawn randn·3, seed 101, wrote into its input: at (0,0) it was") == 0, m);
}

TEST_SUITE_END();
