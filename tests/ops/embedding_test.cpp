// embedding (autograd/ops/embedding.cpp).
#include "tests/test_util.hpp"

#include <cmath>
#include <random>
#include <string>

TEST_SUITE_BEGIN("ops");

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

TEST_SUITE_END();
