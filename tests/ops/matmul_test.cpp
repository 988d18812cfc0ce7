#include "tests/test_util.hpp"

using namespace xtgrad;
using test::rnd;
using V = std::vector<Tensor>;

TEST_CASE("matmul 2-D matches a hand product and passes gradcheck") {
    Tensor a = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
    Tensor b = Tensor::from_vector({1, 0, 0, 1, 1, 1}, {3, 2});
    Tensor c = matmul(a, b);  // [[1+3, 2+3], [4+6, 5+6]]
    CHECK(c.data()(0, 0) == 4.f);
    CHECK(c.data()(1, 1) == 11.f);
    CHECK(gradcheck([](const V& x) { return matmul(x[0], x[1]); }, {rnd({4, 3}, 1), rnd({3, 5}, 2)}));
}

TEST_CASE("batched matmul with broadcast batch dims") {
    Tensor a = rnd({2, 1, 3, 4}, 3), b = rnd({3, 4, 2}, 4);
    Tensor c = matmul(a, b);
    CHECK(c.shape() == Shape{2, 3, 3, 2});
    // slice (1, 2) of the result is a[1, 0] @ b[2]
    Tensor ref = matmul(narrow(reshape(a, {2, 3, 4}), 0, 1, 1), narrow(b, 0, 2, 1));
    CHECK(ref.data()(0, 1, 1) == doctest::Approx(c.data()(1, 2, 1, 1)));
    CHECK(gradcheck([](const V& x) { return matmul(x[0], x[1]); }, {a, b}));
    CHECK(gradcheck([](const V& x) { return matmul(x[0], x[1]); }, {rnd({2, 3, 4}, 5), rnd({4, 2}, 6)}));
    CHECK(gradcheck([](const V& x) { return matmul(x[0], x[1]); }, {rnd({3, 4}, 7), rnd({2, 4, 2}, 8)}));
}

TEST_CASE("matmul of vectors") {
    CHECK(gradcheck([](const V& x) { return matmul(x[0], x[1]); }, {rnd({4}, 9), rnd({4, 3}, 10)}));
    CHECK(gradcheck([](const V& x) { return matmul(x[0], x[1]); }, {rnd({2, 4}, 11), rnd({4}, 12)}));
    CHECK(matmul(rnd({2, 4}), rnd({4})).shape() == Shape{2});
}

TEST_CASE("matmul accumulates into existing gradients (beta = 1)") {
    Tensor a = rnd({2, 3}, 13), b = rnd({3, 2}, 14);
    sum(matmul(a, b)).backward();
    const Array once = a.grad_array();
    sum(matmul(a, b)).backward();
    CHECK(test::max_abs_diff(a.grad_array(), Array(2.f * once)) < 1e-5f);
}

TEST_CASE("linear with and without bias") {
    Tensor x = rnd({2, 3, 4}, 15), w = rnd({5, 4}, 16), b = rnd({5}, 17);
    CHECK(linear(x, w, b).shape() == Shape{2, 3, 5});
    CHECK(gradcheck([](const V& v) { return linear(v[0], v[1], v[2]); }, {x, w, b}));
    CHECK(gradcheck([](const V& v) { return linear(v[0], v[1]); }, {x, w}));
    Tensor ref = matmul(x, transpose(w, 0, 1)) + b;
    CHECK(test::max_abs_diff(ref.data(), linear(x, w, b).data()) < 1e-5f);
}

TEST_CASE("matmul and linear name the shapes at fault") {
    test::check_error([] { matmul(rnd({2, 3}), rnd({4, 5})); },
                      {"matmul: cannot multiply (2,3) by (4,5): inner dimensions 3 and 4 differ"});
    test::check_error([] { matmul(rnd({2, 2, 3}), rnd({3, 3, 2})); }, {"matmul", "(2)", "(3)"});
    test::check_error([] { linear(rnd({2, 3}), rnd({5, 4})); }, {"linear", "(2,3)", "(5,4)"});
    test::check_error([] { linear(rnd({2, 4}), rnd({5, 4}), rnd({4})); }, {"linear", "bias", "(4)"});
}
