// narrow, slice, split, chunk, index_select, cat (autograd/ops/select.cpp).
#include "tests/test_util.hpp"

#include <limits>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;
using test::rnd;
using V = std::vector<Tensor>;

TEST_CASE("cat, split, chunk, narrow, slice, index_select") {
    Tensor a = rnd({2, 3}, 5), b = rnd({2, 2}, 6);
    Tensor c = cat({a, b}, 1);
    CHECK(c.shape() == Shape{2, 5});
    CHECK(c.data()(1, 4) == b.data()(1, 1));
    CHECK(gradcheck([](const V& x) { return cat({x[0], x[1]}, -1); }, {a, b}));
    CHECK(gradcheck([](const V& x) { return cat({x[0], x[0]}, 0); }, {a}));  // one tensor used twice

    Tensor d = rnd({5, 4}, 7);
    std::vector<Tensor> parts = split(d, 2, 0);
    REQUIRE(parts.size() == 3);
    CHECK(parts[2].shape() == Shape{1, 4});
    CHECK(chunk(d, 2, 1).size() == 2);
    CHECK(gradcheck([](const V& x) { return split(x[0], 2, 0)[1]; }, {d}));
    CHECK(gradcheck([](const V& x) { return chunk(x[0], 3, 0)[0]; }, {d}));
    CHECK(gradcheck([](const V& x) { return narrow(x[0], 1, 1, 2); }, {d}));

    Tensor s = slice(d, 0, 1, 100, 2);  // rows 1 and 3
    CHECK(s.shape() == Shape{2, 4});
    CHECK(s.data()(1, 0) == d.data()(3, 0));
    CHECK(slice(d, 0, -2, 5).shape() == Shape{2, 4});
    CHECK(gradcheck([](const V& x) { return slice(x[0], 1, 0, 4, 3); }, {d}));

    Ids idx = {3, 0, 3};
    Tensor sel = index_select(d, 0, idx);
    CHECK(sel.data()(2, 1) == d.data()(3, 1));
    CHECK(gradcheck([idx](const V& x) { return index_select(x[0], 0, idx); }, {d}));  // repeated row adds up
}

TEST_SUITE_END();
