// Exercise 00's grader: the engine's gradients against yours.
#include "exercise.hpp"
#include "grading.hpp"

using namespace xtgrad;

TEST_SUITE_BEGIN("00_scalar");

TEST_CASE("00_scalar: L = a*b + c") {
    Tensor a = Tensor::scalar(2, true), b = Tensor::scalar(-3, true), c = Tensor::scalar(10, true);
    Tensor L = a * b + c;
    L.backward();
    const ex00::Grads mine = ex00::by_hand_mul_add();
    GRADE_SCALAR("L = a*b + c: dL/da", mine.da, a.grad_array()(), 1e-6);
    GRADE_SCALAR("L = a*b + c: dL/db", mine.db, b.grad_array()(), 1e-6);
    GRADE_SCALAR("L = a*b + c: dL/dc", mine.dc, c.grad_array()(), 1e-6);
}

TEST_CASE("00_scalar: L = a*b + a (a used twice)") {
    Tensor a = Tensor::scalar(2, true), b = Tensor::scalar(-3, true);
    Tensor L = a * b + a;
    L.backward();
    const ex00::Grads mine = ex00::by_hand_used_twice();
    GRADE_SCALAR("L = a*b + a: dL/da", mine.da, a.grad_array()(), 1e-6);
    GRADE_SCALAR("L = a*b + a: dL/db", mine.db, b.grad_array()(), 1e-6);
    GRADE_SCALAR("L = a*b + a: dc (there is no c)", mine.dc, 0.0, 0.0);
}

TEST_SUITE_END();
