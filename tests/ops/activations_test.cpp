// gelu (autograd/ops/activations.cpp), with relu, its neighbour among the activations.
#include "tests/test_util.hpp"

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;
using test::positive;
using test::rnd;
using V = std::vector<Tensor>;

TEST_CASE("relu and both gelu forms") {
    // values away from relu's kink at 0, where the finite difference is meaningless
    Tensor a = Tensor::from_vector({-2.f, -0.7f, -0.3f, 0.4f, 0.9f, 1.5f}, {2, 3}, true);
    CHECK(gradcheck([](const V& x) { return relu(x[0]); }, {a}));
    CHECK(relu(a).data()(0, 1) == 0.f);
    Tensor b = rnd({3, 5}, 8, 1.5f);
    CHECK(gradcheck([](const V& x) { return gelu(x[0]); }, {b}));
    CHECK(gradcheck([](const V& x) { return gelu(x[0], GeluApproximation::tanh); }, {b}));
    // reference values from torch.nn.functional.gelu
    Tensor c = Tensor::from_vector({-1.f, 0.5f, 2.f}, {3});
    CHECK(gelu(c).data()(0) == doctest::Approx(-0.158655).epsilon(1e-5));
    CHECK(gelu(c).data()(2) == doctest::Approx(1.954500).epsilon(1e-5));
    CHECK(gelu(c, GeluApproximation::tanh).data()(1) == doctest::Approx(0.345714).epsilon(1e-5));
}

TEST_SUITE_END();
