// Exercise 00's grader: the engine's gradients against yours.
#include "exercise.hpp"
#include "grading.hpp"

using namespace xtgrad;

TEST_SUITE_BEGIN("00_scalar");

TEST_CASE("00_scalar: L = (a + b)*c") {
    Tensor a = Tensor::scalar(2, true), b = Tensor::scalar(-3, true), c = Tensor::scalar(10, true);
    Tensor L = (a + b) * c;
    L.backward();
    const ex00::Grads mine = ex00::by_hand_sum_times();
    GRADE_SCALAR("L = (a + b)*c: dL/da", mine.da, a.grad_array()(), 1e-6);
    GRADE_SCALAR("L = (a + b)*c: dL/db", mine.db, b.grad_array()(), 1e-6);
    GRADE_SCALAR("L = (a + b)*c: dL/dc", mine.dc, c.grad_array()(), 1e-6);
}

TEST_CASE("00_scalar: L = a*a*b (a used twice)") {
    Tensor a = Tensor::scalar(2, true), b = Tensor::scalar(-3, true);
    Tensor L = a * a * b;
    L.backward();
    const ex00::Grads mine = ex00::by_hand_square_times();
    GRADE_SCALAR("L = a*a*b: dL/da", mine.da, a.grad_array()(), 1e-6);
    GRADE_SCALAR("L = a*a*b: dL/db", mine.db, b.grad_array()(), 1e-6);
    GRADE_SCALAR("L = a*a*b: dc (there is no c)", mine.dc, 0.0, 0.0);
}

TEST_SUITE_END();
