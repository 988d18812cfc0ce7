// Exercise 01's grader: sigmoid's values, its gradient and gradcheck, each with its own message.
#include "exercise.hpp"
#include "grading.hpp"

using namespace xtgrad;

TEST_SUITE_BEGIN("01_sigmoid");

namespace {
Tensor input() {
    return Tensor::from_vector({-3.f, -1.f, -0.25f, 0.f, 0.5f, 2.f}, {2, 3}, /*requires_grad=*/true);
}
// The upstream gradient: not all ones, so a backward that ignores g is caught.
Array upstream() { return Tensor::from_vector({1.f, -2.f, 0.5f, 3.f, -1.f, 0.25f}, {2, 3}).data(); }
}  // namespace

TEST_CASE("01_sigmoid: forward values") {
    Tensor x = input();
    const Tensor want = 1.f / (1.f + exp(-x));  // the same function made of xtgrad's own ops
    GRADE_CLOSE("sigmoid(x) values", ex01::sigmoid(x).data(), want.data(), 1e-6);
}

TEST_CASE("01_sigmoid: backward, d (sum(sigmoid(x) * g)) / d x") {
    Tensor x = input(), ref = input();
    ex01::sigmoid(x).backward(upstream());
    (1.f / (1.f + exp(-ref))).backward(upstream());
    GRADE_CLOSE("d loss / d x", grading::grad_or_zeros(x), ref.grad_array(), 1e-6);
}

TEST_CASE("01_sigmoid: gradcheck (finite differences agree with your backward)") {
    GRADE_GRADCHECK(gradcheck([](const std::vector<Tensor>& v) { return ex01::sigmoid(v[0]); }, {input()}));
}

TEST_SUITE_END();
