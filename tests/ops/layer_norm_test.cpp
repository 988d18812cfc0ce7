// layer_norm (autograd/ops/layer_norm.cpp).
#include "tests/test_util.hpp"

#include <cmath>
#include <random>
#include <string>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;
using test::rnd;
using V = std::vector<Tensor>;

TEST_CASE("layer_norm: torch's formula, gradcheck with and without affine terms") {
    Tensor x = rnd({2, 3, 5}, 10), w = rnd({5}, 11), b = rnd({5}, 12);
    Tensor y = layer_norm(x, w, b, 1e-5f);
    // reference: composed from primitive ops
    Tensor m = mean(x, {-1}, true);
    Tensor ref = (x - m) / sqrt(var(x, {-1}, false, true) + 1e-5f) * w + b;
    CHECK(test::max_abs_diff(y.data(), ref.data()) < 1e-5f);
    CHECK(gradcheck([](const V& v) { return layer_norm(v[0], v[1], v[2], 1e-5f); }, {x, w, b}));
    CHECK(gradcheck([](const V& v) { return layer_norm(v[0], Tensor(), Tensor(), 1e-5f); }, {x}));
    test::expect_error([&] { layer_norm(x, rnd({4}), b); }, {"layer_norm", "weight", "(4)", "(2,3,5)"});
}

TEST_SUITE_END();

TEST_CASE("layer_norm: a variance past float's range gives NaN as torch's does, not finite zeros") {
    Tensor x = Tensor::from_vector({3e38f, -3e38f, 0.f, 1.f}, {1, 4});
    Tensor y = layer_norm(x, {}, {}, 1e-5f);
    for (std::size_t j = 0; j < 4; ++j) CHECK(std::isnan(y.data()(0, j)));
}
