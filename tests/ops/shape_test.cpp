#include "tests/test_util.hpp"

#include <xtgrad/autograd/broadcast.hpp>

#include <limits>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;
using test::rnd;
using V = std::vector<Tensor>;

TEST_CASE("permute and transpose move elements and pass gradcheck") {
    Tensor a = rnd({2, 3, 4}, 1);
    Tensor p = permute(a, {2, 0, 1});
    CHECK(p.shape() == Shape{4, 2, 3});
    CHECK(p.data()(3, 1, 2) == a.data()(1, 2, 3));
    CHECK(transpose(a, 0, -1).data()(3, 2, 1) == a.data()(1, 2, 3));
    CHECK(gradcheck([](const V& x) { return permute(x[0], {1, 2, 0}); }, {a}));
    CHECK(gradcheck([](const V& x) { return transpose(x[0], 1, 2); }, {a}));
}

TEST_CASE("reshape, view, unsqueeze, squeeze, contiguous") {
    Tensor a = rnd({2, 6}, 2);
    CHECK(reshape(a, {3, -1}).shape() == Shape{3, 4});
    CHECK(view(a, {12}).data()(7) == a.data()(1, 1));
    CHECK(unsqueeze(a, 1).shape() == Shape{2, 1, 6});
    CHECK(unsqueeze(a, -1).shape() == Shape{2, 6, 1});
    CHECK(squeeze(unsqueeze(a, 0), 0).shape() == Shape{2, 6});
    CHECK(squeeze(a, 0).shape() == Shape{2, 6});  // not size 1: unchanged, as torch
    CHECK(contiguous(a).impl() == a.impl());
    CHECK(gradcheck([](const V& x) { return reshape(x[0], {4, 3}); }, {a}));
    CHECK(gradcheck([](const V& x) { return unsqueeze(x[0], 1); }, {a}));
    CHECK(gradcheck([](const V& x) { return squeeze(x[0], 1); }, {rnd({3, 1, 2}, 3)}));
}

TEST_CASE("expand broadcasts and sums back") {
    Tensor a = rnd({3, 1}, 4);
    Tensor e = expand(a, {2, 3, 4});
    CHECK(e.shape() == Shape{2, 3, 4});
    CHECK(e.data()(1, 2, 3) == a.data()(2, 0));
    CHECK(gradcheck([](const V& x) { return expand(x[0], {2, 3, 4}); }, {a}));
}

TEST_CASE("broadcast_strides and strided_offsets read a broadcast operand in place, as expand's copy holds it") {
    // (3, 1) read as (2, 3, 4): the leading axis it lacks and its size-1 axis have stride 0
    const Shape from{3, 1}, to{2, 3, 4};
    const std::vector<std::size_t> stride = broadcast_strides(from, to.size());
    CHECK(stride == std::vector<std::size_t>{0, 1, 0});
    // every element of the expanded copy is the operand's element at the strided offset
    Tensor a = rnd(from, 5), e = expand(a, to);
    const std::vector<std::size_t> rows = strided_offsets(to, 2, stride);  // per (i, j) of the first two axes
    REQUIRE(rows.size() == 6);
    for (std::size_t i = 0; i < 2; ++i)
        for (std::size_t j = 0; j < 3; ++j)
            for (std::size_t k = 0; k < 4; ++k) CHECK(e.data()(i, j, k) == a.ptr()[rows[i * 3 + j] + k * stride[2]]);
    // no axes: one block at offset 0; a full-rank operand: its own row-major offsets
    CHECK(strided_offsets(to, 0, stride) == std::vector<std::size_t>{0});
    CHECK(strided_offsets(Shape{2, 3}, 2, broadcast_strides(Shape{2, 3}, 2)) == std::vector<std::size_t>{0, 1, 2, 3, 4, 5});
}

TEST_CASE("shape ops name the shapes and values at fault") {
    Tensor a = rnd({2, 3});
    test::expect_error([&] { reshape(a, {4, 2}); }, {"reshape", "(4,2)", "(2,3)"});
    test::expect_error([&] { reshape(a, {-1, -1}); }, {"reshape", "-1"});
    test::expect_error([&] { permute(a, {0, 0}); }, {"permute", "repeat"});
    test::expect_error([&] { transpose(a, 0, 2); }, {"transpose", "dim 2", "(2,3)"});
    test::expect_error([&] { cat({a, rnd({3, 3})}, 1); }, {"cat", "(2,3)", "(3,3)"});
    test::expect_error([&] { narrow(a, 1, 2, 2); }, {"narrow", "exceeds"});
    test::expect_error([&] { index_select(a, 1, Ids{0, 3}); }, {"index_select", "index 3", "size 3"});
    test::expect_error([&] { expand(a, {2, 4}); }, {"expand", "(2,3)", "(2,4)"});
}

TEST_CASE("sizes that overflow are an Error, never a short allocation") {
    const std::size_t huge = std::size_t{1} << 61;
    test::expect_error([&] { (void)Tensor::zeros({huge, 16}); }, {"more elements than fit in memory", "(2305843009213693952,16)"});
    Tensor a = test::rnd({1, 3}, 1);
    test::expect_error([&] { (void)expand(a, {huge, 16, 3}); }, {"expand", "more elements than fit in memory"});
    test::expect_error([&] { (void)reshape(a, {static_cast<long>(huge), 16, -1}); }, {"reshape", "more elements than fit in memory"});
    // a zero-sized dim next to huge ones has no elements, and no overflow
    Tensor empty = Tensor::zeros({huge, 0}, true);
    CHECK(empty.numel() == 0);
    Tensor total = sum(empty);
    CHECK(total.item() == 0.f);
    total.backward();
    CHECK(empty.grad_array().size() == 0);
    // ... but the dims after the last 0 give the strides, and (0, 2^32, 2^32)'s would overflow a long
    const std::size_t wide = std::size_t{1} << 32;
    test::expect_error([&] { (void)Tensor::zeros({0, wide, wide}); }, {"tensor", "(0,4294967296,4294967296) is empty", "strides"});
    CHECK(Tensor::zeros({wide, wide, 0}).numel() == 0);
    CHECK(transpose(Tensor::zeros({huge, 0}), 0, 1).shape() == Shape{0, huge});  // a stride of 2^61 fits
    // empty results of ops over 2^62 rows or slices: no loop over them, and sizes that wrap are refused
    CHECK(softmax(Tensor::zeros({std::size_t{1} << 62, 0}), 1).numel() == 0);
    const Tensor half = Tensor::zeros({std::size_t{1} << 63, 0});
    test::expect_error([&] { (void)cat({half, half}, 0); }, {"cat: along dim 0", "add past a size_t"});
    // (2^45 slices: their offsets are refused before any allocation, which AddressSanitizer would abort on)
    test::expect_error([&] { (void)matmul(Tensor::zeros({std::size_t{1} << 45, 1, 0}), Tensor::zeros({std::size_t{1} << 45, 0, 1})); },
                       {"matmul (batch dims)", "more slices than their offsets fit in memory"});
    // narrow: start + length wraps around size_t
    test::expect_error([&] { (void)narrow(a, 1, 2, std::numeric_limits<std::size_t>::max()); }, {"narrow", "exceeds"});
    test::expect_error([&] { (void)narrow(a, 1, 5, 0); }, {"narrow", "exceeds"});
    CHECK(narrow(a, 1, 3, 0).numel() == 0);
}

TEST_SUITE_END();
