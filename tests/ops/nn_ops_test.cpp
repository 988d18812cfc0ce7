// embedding, dropout, cross_entropy, conv1d.
#include "tests/test_util.hpp"

#include <cmath>
#include <random>
#include <string>

using namespace xtgrad;
using test::rnd;
using V = std::vector<Tensor>;

TEST_CASE("embedding gathers rows and scatter-adds gradients") {
    Tensor w = rnd({5, 3}, 1);
    Ids ids = {{1, 4, 1}, {0, 2, 0}};
    Tensor e = embedding(w, ids);
    CHECK(e.shape() == Shape{2, 3, 3});
    CHECK(e.data()(0, 1, 2) == w.data()(4, 2));
    CHECK(gradcheck([ids](const V& x) { return embedding(x[0], ids); }, {w}));
}

TEST_CASE("the padding row is read but gets no gradient") {
    Tensor w = rnd({5, 3}, 2);
    Ids ids = {{1, 2, 0, 0}};
    Tensor e = embedding(w, ids, 0);
    CHECK(e.data()(0, 2, 1) == w.data()(0, 1));  // forward reads row 0 as it is
    sum(e * e).backward();
    for (std::size_t j = 0; j < 3; ++j) CHECK(w.grad_array()(0, j) == 0.f);
    CHECK(w.grad_array()(1, 0) == doctest::Approx(2 * w.data()(1, 0)));
    // every row but the padding one passes gradcheck; row 0 differs by design
    GradcheckResult r = gradcheck([ids](const V& x) { return embedding(x[0], ids, 0); }, {w});
    CHECK_FALSE(r.passed);
    CHECK(r.index[0] == 0);
}

TEST_CASE("embedding rejects ids out of range") {
    Tensor w = rnd({5, 3});
    test::expect_error([&] { embedding(w, Ids{{1, 5}}); }, {"embedding", "id 5", "5 rows"});
    test::expect_error([&] { embedding(w, Ids{-1}); }, {"embedding", "id -1"});
    test::expect_error([&] { embedding(w, Ids{1}, 7); }, {"embedding", "padding_idx 7"});
}

TEST_CASE("dropout: identity in eval, inverted scaling in training, seeded") {
    Tensor a = Tensor::ones({1000}, true);
    Generator g1(7), g2(7);
    CHECK(dropout(a, 0.5f, false, g1).impl() == a.impl());
    Tensor d1 = dropout(a, 0.25f, true, g1), d2 = dropout(a, 0.25f, true, g2);
    CHECK(test::max_abs_diff(d1.data(), d2.data()) == 0.f);  // same seed, same mask
    std::size_t zeros = 0;
    for (float v : d1.data()) {
        CHECK((v == 0.f || v == doctest::Approx(1.f / 0.75f)));
        zeros += v == 0.f;
    }
    CHECK(zeros > 200);
    CHECK(zeros < 300);
    sum(d1).backward();
    CHECK(test::max_abs_diff(a.grad_array(), d1.data()) == 0.f);  // dy/dx = mask / (1-p)
    test::expect_error([&] { dropout(a, 1.5f, true, g1); }, {"dropout", "1.5"});
}

TEST_CASE("dropout keeps exactly where torch's bernoulli_(1 - p) does") {
    for (const float p : {0.1f, 0.25f, 0.5f, 0.9f}) {
        Generator g(11), ref(11);
        const Array d = dropout(Tensor::ones({4097}), p, true, g).data();
        std::size_t mismatches = 0;
        for (float v : d) mismatches += (v != 0.f) != (ref.uniform_double() < 1.0 - std::stod(fmt::format("{}", p)));
        CHECK(mismatches == 0);
    }
}

TEST_CASE("cross_entropy: values, ignore_index, label smoothing, gradcheck") {
    Tensor logits = Tensor::from_vector({2.f, 1.f, 0.1f, 0.5f, 2.5f, 0.3f}, {2, 3}, true);
    Ids t = {0, 1};
    // torch: F.cross_entropy(tensor([[2,1,.1],[.5,2.5,.3]]), tensor([0,1])) = 0.3185..
    const float l0 = 2.f - std::log(std::exp(2.f) + std::exp(1.f) + std::exp(0.1f));
    const float l1 = 2.5f - std::log(std::exp(0.5f) + std::exp(2.5f) + std::exp(0.3f));
    CHECK(cross_entropy(logits, t).item() == doctest::Approx(-(l0 + l1) / 2));
    CHECK(cross_entropy(logits, Ids{0, -100}).item() == doctest::Approx(-l0));
    Tensor big = rnd({5, 4}, 3, 3.f);
    Ids tt = {0, 3, 1, 0, 2};
    CHECK(gradcheck([tt](const V& x) { return cross_entropy(x[0], tt); }, {big}));
    CHECK(gradcheck([tt](const V& x) { return cross_entropy(x[0], tt, 0); }, {big}));
    CHECK(gradcheck([tt](const V& x) { return cross_entropy(x[0], tt, 0, 0.1f); }, {big}));
    Tensor huge = Tensor::from_vector({1000.f, -1000.f}, {1, 2});
    CHECK(std::isfinite(cross_entropy(huge, Ids{1}).item()));
    CHECK(cross_entropy(huge, Ids{1}).item() == doctest::Approx(2000.f));
}

TEST_CASE("cross_entropy rejects bad targets") {
    Tensor l = rnd({2, 3});
    test::expect_error([&] { cross_entropy(l, Ids{0, 3}); }, {"cross_entropy", "target 3", "3 classes"});
    test::expect_error([&] { cross_entropy(l, Ids{0}); }, {"cross_entropy", "(1)", "(2,3)"});
    test::expect_error([&] { cross_entropy(l, Ids{0, 0}, 0); }, {"cross_entropy", "ignore_index 0"});
}

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
}

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
