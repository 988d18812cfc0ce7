#include "autograd/ops.hpp"
#include "autograd/grad_mode.hpp"

#include <doctest/doctest.h>

using namespace xtgrad;

TEST_CASE("a reused tensor gets the sum of both gradients") {
    Tensor x = Tensor::from_vector({1, 2, 3}, {3}, true);
    Tensor y = sum(x * x + x);  // dy/dx = 2x + 1
    y.backward();
    CHECK(x.grad_array()(0) == doctest::Approx(3));
    CHECK(x.grad_array()(2) == doctest::Approx(7));
}
