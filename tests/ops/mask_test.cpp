// masked_fill, triu, tril (autograd/ops/mask.cpp).
#include "tests/test_util.hpp"

#include <cmath>
#include <limits>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;
using test::rnd;
using V = std::vector<Tensor>;

TEST_CASE("masked_fill with finite and -inf fills") {
    Tensor a = rnd({2, 3, 4}, 2);
    Mask m = {{false, true, false, true}};  // (1, 4) broadcasts over (2, 3, 4)
    Tensor f = masked_fill(a, m, -1e9f);
    CHECK(f.data()(1, 2, 1) == -1e9f);
    CHECK(f.data()(1, 2, 2) == a.data()(1, 2, 2));
    CHECK(gradcheck([m](const V& x) { return masked_fill(x[0], m, -1e9f); }, {a}));
    // -inf fill then softmax: masked keys get probability exactly 0
    Tensor p = softmax(masked_fill(a, m, -std::numeric_limits<float>::infinity()), -1);
    CHECK(p.data()(0, 0, 1) == 0.f);
    CHECK(gradcheck([m](const V& x) { return softmax(masked_fill(x[0], m, -INFINITY), -1); }, {a}));
    test::expect_error([&] { masked_fill(a, Mask{{true, false}}, 0.f); }, {"masked_fill", "(1,2)", "(2,3,4)"});
}

TEST_CASE("triu and tril") {
    Tensor a = rnd({2, 3, 3}, 4);
    Tensor u = triu(a), l = tril(a, -1);
    CHECK(u.data()(1, 2, 0) == 0.f);
    CHECK(u.data()(1, 0, 2) == a.data()(1, 0, 2));
    CHECK(l.data()(0, 1, 1) == 0.f);
    CHECK(l.data()(0, 2, 0) == a.data()(0, 2, 0));
    CHECK(triu(a, 1).data()(0, 1, 1) == 0.f);
    CHECK(gradcheck([](const V& x) { return triu(x[0], 1); }, {a}));
    CHECK(gradcheck([](const V& x) { return tril(x[0]); }, {a}));
    test::expect_error([] { triu(rnd({3})); }, {"triu", "2 dims", "(3)"});
}

TEST_SUITE_END();
