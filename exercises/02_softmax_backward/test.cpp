// Exercise 02's grader: your softmax backward against xtgrad's softmax, then gradcheck.
#include "exercise.hpp"
#include "grading.hpp"

using namespace xtgrad;

TEST_SUITE_BEGIN("02_softmax_backward");

namespace {
Tensor input() {
    return Tensor::from_vector({1.f, 2.f, 3.f, 0.5f, -1.f, 0.f, 2.f, 2.f}, {2, 4}, /*requires_grad=*/true);
}
Array upstream() { return Tensor::from_vector({1.f, -1.f, 0.5f, 2.f, 0.f, 3.f, -2.f, 1.f}, {2, 4}).data(); }
}  // namespace

TEST_CASE("02_softmax_backward: dx for one upstream gradient g") {
    Tensor x = input(), ref = input();
    ex02::softmax_rows(x).backward(upstream());
    softmax(ref, -1).backward(upstream());
    GRADE_CLOSE("softmax backward, dx", grading::grad_or_zeros(x), ref.grad_array(), 1e-5);
}

TEST_CASE("02_softmax_backward: g = all ones gives dx = 0 (each row of y sums to 1)") {
    Tensor x = input();
    ex02::softmax_rows(x).backward(Array(xt::ones<float>({2, 4})));
    GRADE_CLOSE("dx for g = ones", grading::grad_or_zeros(x), Array(xt::zeros<float>({2, 4})), 1e-6);
}

TEST_CASE("02_softmax_backward: gradcheck") {
    GRADE_GRADCHECK(gradcheck([](const std::vector<Tensor>& v) { return ex02::softmax_rows(v[0]); }, {input()}));
}

TEST_SUITE_END();
