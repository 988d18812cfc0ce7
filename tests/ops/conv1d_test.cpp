// conv1d (autograd/ops/conv1d.cpp).
#include "tests/test_util.hpp"

#include <cmath>
#include <random>
#include <string>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;
using test::rnd;
using V = std::vector<Tensor>;

TEST_CASE("conv1d: any kernel, padding, bias; kernel 1 equals a linear layer") {
    Tensor x = rnd({2, 3, 6}, 4), w = rnd({4, 3, 3}, 5), b = rnd({4}, 6);
    CHECK(conv1d(x, w, b, 1).shape() == Shape{2, 4, 6});
    CHECK(conv1d(x, rnd({4, 3, 4}), Tensor(), 0).shape() == Shape{2, 4, 3});
    CHECK(gradcheck([](const V& v) { return conv1d(v[0], v[1], v[2], 1); }, {x, w, b}));
    CHECK(gradcheck([](const V& v) { return conv1d(v[0], v[1], Tensor(), 0); }, {x, rnd({2, 3, 4}, 7)}));
    Tensor w1 = rnd({5, 3, 1}, 8);
    CHECK(gradcheck([](const V& v) { return conv1d(v[0], v[1], v[2]); }, {x, w1, rnd({5}, 9)}));
    // y[b, o, t] = Σ_c w[o, c] x[b, c, t] + bias: the same as linear over the channel axis
    Tensor conv = conv1d(x, w1, b.defined() ? rnd({5}, 9) : Tensor());
    Tensor lin = transpose(linear(transpose(x, 1, 2), reshape(w1, {5, 3}), rnd({5}, 9)), 1, 2);
    CHECK(test::max_abs_diff(conv.data(), lin.data()) < 1e-5f);
}

TEST_CASE("conv1d names the shapes at fault") {
    test::expect_error([] { conv1d(rnd({2, 3, 6}), rnd({4, 2, 1})); }, {"conv1d", "3 channels", "(4,2,1)"});
    test::expect_error([] { conv1d(rnd({3, 6}), rnd({4, 3, 1})); }, {"conv1d", "3-D", "(3,6)"});
    test::expect_error([] { conv1d(rnd({1, 3, 2}), rnd({4, 3, 5})); }, {"conv1d", "kernel size 5"});
    // kernel 0 gave an output one longer than the input, of bias values (nn::Conv1d refused it)
    test::expect_error([] { conv1d(rnd({1, 1, 3}), Tensor::zeros({1, 1, 0}), rnd({1})); }, {"conv1d: kernel size must be positive", "(1,1,0)"});
    // L + 2·padding once wrapped a size_t into a short output: sizes past an int are refused
    for (std::size_t padding : {SIZE_MAX / 2, std::size_t{1} << 31, std::size_t{1} << 30})
        test::expect_error([&] { conv1d(rnd({1, 1, 3}), rnd({2, 1, 3}), Tensor(), padding); },
                           {"conv1d: sizes too large for the products", "(1,1,3)"});
}

TEST_SUITE_END();
