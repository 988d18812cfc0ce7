// Exercise 03's grader: your backward against the same LayerNorm composed of xtgrad's ops
// (nn::LayerNormUnbiased's forward: mean, stddev, -, /, *, +), each gradient on its own.
#include "exercise.hpp"
#include "grading.hpp"

using namespace xtgrad;

TEST_SUITE_BEGIN("03_layer_norm_a");

namespace {
constexpr float kEps = 1e-6f;  // tutorial A's
struct Inputs {
    Tensor x = Tensor::from_vector({1.f, 2.f, 4.f, -1.f, 0.5f, 0.f, 3.f, 1.f, 2.f}, {3, 3}, true);
    Tensor gamma = Tensor::from_vector({1.5f, -0.5f, 2.f}, {3}, true);
    Tensor beta = Tensor::from_vector({0.1f, 0.2f, -0.3f}, {3}, true);
};
Array upstream() { return Tensor::from_vector({1.f, -2.f, 0.5f, 0.f, 1.f, 3.f, -1.f, 2.f, 1.f}, {3, 3}).data(); }
Tensor composed(const Inputs& in) {
    Tensor mu = mean(in.x, {-1}, true);
    Tensor s = stddev(in.x, {-1}, /*unbiased=*/true, true);
    return in.gamma * (in.x - mu) / (s + kEps) + in.beta;
}
}  // namespace

TEST_CASE("03_layer_norm_a: the forward (given) matches the composition") {
    Inputs mine, ref;
    GRADE_CLOSE("layer_norm_a(x) values", ex03::layer_norm_a(mine.x, mine.gamma, mine.beta, kEps).data(),
                composed(ref).data(), 1e-5);
}

TEST_CASE("03_layer_norm_a: dgamma, dbeta, dx") {
    Inputs mine, ref;
    ex03::layer_norm_a(mine.x, mine.gamma, mine.beta, kEps).backward(upstream());
    composed(ref).backward(upstream());
    GRADE_CLOSE("d loss / d beta", grading::grad_or_zeros(mine.beta), ref.beta.grad_array(), 1e-5);
    GRADE_CLOSE("d loss / d gamma", grading::grad_or_zeros(mine.gamma), ref.gamma.grad_array(), 1e-5);
    GRADE_CLOSE("d loss / d x", grading::grad_or_zeros(mine.x), ref.x.grad_array(), 1e-4);
}

TEST_CASE("03_layer_norm_a: gradcheck of x, gamma and beta") {
    Inputs in;
    GRADE_GRADCHECK(gradcheck(
        [](const std::vector<Tensor>& v) { return ex03::layer_norm_a(v[0], v[1], v[2], kEps); },
        {in.x, in.gamma, in.beta}));
}

// A constant row (a padded position of a batch): its std is 0, and a backward that divides by it
// gives 0/0 = NaN where the composition's std gives 0 (xtgrad's stddev backward at a zero std).
TEST_CASE("03_layer_norm_a: a constant row gives finite gradients, the composition's") {
    Inputs mine, ref;
    for (Tensor* x : {&mine.x, &ref.x})
        for (std::size_t i = 0; i < 3; ++i) x->mutable_data()(1, i) = 0.75f;
    ex03::layer_norm_a(mine.x, mine.gamma, mine.beta, kEps).backward(upstream());
    composed(ref).backward(upstream());
    // dx is ~1e6 on that row (the std is only eps): a tolerance relative to it
    const double scale = xt::amax(xt::abs(ref.x.grad_array()))();
    GRADE_CLOSE("d loss / d x (row 1 constant)", grading::grad_or_zeros(mine.x), ref.x.grad_array(), 1e-5 * scale);
    GRADE_CLOSE("d loss / d gamma (row 1 constant)", grading::grad_or_zeros(mine.gamma), ref.gamma.grad_array(),
                1e-5 * scale);
}

TEST_SUITE_END();
