#include "tests/test_util.hpp"

#include <xtgrad/gemm/blas.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>

TEST_SUITE_BEGIN("ops");

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
    // both 1-D: the dot product, a 0-d tensor (torch's rule)
    const Tensor dot = matmul(Tensor::from_vector({1, 2, 3}, {3}), Tensor::from_vector({4, 5, 6}, {3}));
    CHECK(dot.shape() == Shape{});
    CHECK(dot.item() == 32.f);
    CHECK(gradcheck([](const V& x) { return matmul(x[0], x[1]); }, {rnd({5}, 13), rnd({5}, 14)}));
    test::expect_error([] { matmul(rnd({3}), rnd({4})); }, {"matmul", "(1,3)", "(4,1)"});
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

TEST_CASE("linear_rows is linear on a row block of the weight, read in place") {
    Tensor x = rnd({2, 3, 4}, 30), w = rnd({9, 4}, 31), b = rnd({9}, 32);
    const Tensor block = linear_rows(x, w, b, 3, 3);
    CHECK(block.shape() == Shape{2, 3, 3});
    CHECK(test::max_abs_diff(block.data(), linear(x, narrow(w, 0, 3, 3), narrow(b, 0, 3, 3)).data()) < 1e-6f);
    CHECK(gradcheck([](const V& v) { return linear_rows(v[0], v[1], v[2], 3, 3); }, {x, w, b}));
    CHECK(gradcheck([](const V& v) { return linear_rows(v[0], v[1], Tensor(), 6, 3); }, {x, w}));
    // q, k, v from one packed weight, as tutorial D's in-projection: the first block's backward
    // finds the weight's gradient fresh (zeroes the other rows), the others add to theirs.
    CHECK(gradcheck(
        [](const V& v) {
            return linear_rows(v[0], v[1], v[2], 0, 3) * linear_rows(v[0], v[1], v[2], 3, 3) +
                   linear_rows(v[0], v[1], v[2], 6, 3);
        },
        {x, w, b}));
    // rows nobody reads get a zero gradient
    Tensor w2 = rnd({9, 4}, 33), b2 = rnd({9}, 34);
    sum(linear_rows(x, w2, b2, 3, 3)).backward();
    const auto max_abs = [](const Array& a, std::size_t begin, std::size_t end) {  // over flat elements [begin, end)
        float m = 0.f;
        for (std::size_t i = begin; i < end; ++i) m = std::max(m, std::abs(a.data()[i]));
        return m;
    };
    CHECK(max_abs(w2.grad_array(), 0, 12) == 0.f);   // rows 0-2 of (9, 4)
    CHECK(max_abs(w2.grad_array(), 24, 36) == 0.f);  // rows 6-8
    CHECK(max_abs(w2.grad_array(), 12, 24) > 0.f);
    CHECK(max_abs(b2.grad_array(), 6, 9) == 0.f);
    CHECK(max_abs(b2.grad_array(), 3, 6) > 0.f);
    test::expect_error([] { linear_rows(rnd({2, 4}), rnd({9, 4}), Tensor(), 7, 3); },
                       {"linear_rows: rows [7, 10) are not within the weight's 9 rows (weight (9,4))"});
    test::expect_error([] { linear_rows(rnd({2, 5}), rnd({9, 4}), Tensor(), 0, 3); }, {"linear_rows", "(2,5)", "(9,4)"});
}

TEST_CASE("matmul and linear name the shapes at fault") {
    test::expect_error([] { matmul(rnd({2, 3}), rnd({4, 5})); },
                      {"matmul: cannot multiply (2,3) by (4,5): inner dimensions 3 and 4 differ"});
    test::expect_error([] { matmul(rnd({2, 2, 3}), rnd({3, 3, 2})); }, {"matmul", "(2)", "(3)"});
    test::expect_error([] { linear(rnd({2, 3}), rnd({5, 4})); }, {"linear", "(2,3)", "(5,4)"});
    test::expect_error([] { linear(rnd({2, 4}), rnd({5, 4}), rnd({4})); }, {"linear", "bias", "(4)"});
}

TEST_CASE("matmul_nt is matmul by the transpose, scaled, and passes gradcheck") {
    Tensor a = rnd({2, 3, 4, 5}, 20), b = rnd({2, 3, 6, 5}, 21);
    const Array ref = (matmul(a, transpose(b, -2, -1)) * 0.5f).data();
    CHECK(test::max_abs_diff(matmul_nt(a, b, 0.5f).data(), ref) < 1e-5f);
    CHECK(gradcheck([](const V& x) { return matmul_nt(x[0], x[1], 0.5f); }, {a, b}));
    // broadcast batch dims, and a 2-D second operand (folded into one GEMM)
    CHECK(gradcheck([](const V& x) { return matmul_nt(x[0], x[1]); }, {rnd({2, 1, 3, 4}, 22), rnd({3, 5, 4}, 23)}));
    CHECK(gradcheck([](const V& x) { return matmul_nt(x[0], x[1], 2.f); }, {rnd({2, 3, 4}, 24), rnd({5, 4}, 25)}));
    test::expect_error([] { matmul_nt(rnd({2, 3}), rnd({4, 5})); },
                      {"matmul_nt: cannot multiply (2,3) by the transpose of (4,5): inner dimensions 3 and 5 differ"});
    test::expect_error([] { matmul_nt(rnd({3}), rnd({4, 3})); }, {"matmul_nt", "at least 2 dims"});
}

TEST_CASE("batched products split over 2 threads give the serial results") {
    // 64 slices of 32x32 by 32x32: above the threshold where for_each_slice uses the pool
    Tensor a = rnd({4, 16, 32, 32}, 30), b = rnd({4, 16, 32, 32}, 31), g = rnd({4, 16, 32, 32}, 32);
    Tensor bb = rnd({16, 32, 32}, 33);  // broadcast over the first batch dim: its gradient sums slices
    const auto run = [&](int threads) {
        set_num_threads(threads);
        for (Tensor* t : {&a, &b, &bb}) t->zero_grad();
        Tensor y = matmul(a, b) + matmul_nt(a, b, 0.25f) + matmul(a, bb);
        y.backward(g.data());
        std::vector<Array> r{y.data(), a.grad_array(), b.grad_array(), bb.grad_array()};
        set_num_threads(1);
        return r;
    };
    const std::vector<Array> serial = run(1), threaded = run(2);
    for (std::size_t i = 0; i < serial.size(); ++i) CHECK(test::max_abs_diff(serial[i], threaded[i]) < 1e-4f);
}

TEST_CASE("parallel_for covers the range once, in chunks, and rethrows") {
    set_num_threads(2);
    std::vector<int> hits(1000, 0);
    parallel_for(hits.size(), 10, [&](std::size_t i0, std::size_t i1) {
        for (std::size_t i = i0; i < i1; ++i) ++hits[i];
    });
    CHECK(std::all_of(hits.begin(), hits.end(), [](int h) { return h == 1; }));
    CHECK_THROWS_AS(parallel_for(100, 1, [](std::size_t i0, std::size_t) {
                        if (i0 > 0) throw std::runtime_error("from the worker");
                    }),
                    std::runtime_error);
    set_num_threads(1);
    CHECK(num_threads() == 1);
}

TEST_CASE("parallel_rows splits only big row loops, covering every row once") {
    set_num_threads(2);
    const auto chunks = [](std::size_t rows, std::size_t len) {
        std::vector<int> hits(rows, 0);
        std::atomic<int> calls{0};
        parallel_rows(rows, len, [&](std::size_t r0, std::size_t r1) {
            ++calls;
            for (std::size_t r = r0; r < r1; ++r) ++hits[r];
        });
        CHECK(std::all_of(hits.begin(), hits.end(), [](int h) { return h == 1; }));
        return calls.load();
    };
    CHECK(chunks(10, 100) == 1);                      // 1000 elements: one call on the caller
    CHECK(chunks(4096, 512) == 2);                    // 2 M elements: one chunk per thread
    CHECK(chunks(3, kParallelElements) == 2);         // few long rows still split
    CHECK(chunks(kParallelElements, 1) == 1);         // one threshold of elements: not worth a worker
    set_num_threads(1);
    CHECK(chunks(4096, 512) == 1);
}

TEST_CASE("products with a tiny inner dimension split over threads give the one-thread results") {
    // linear's dW (256, 512) = dYᵀ (256, 7) · X (7, 512): K = 7, big enough for the split path
    Tensor x = rnd({7, 512}, 40), w = rnd({256, 512}, 41), g = rnd({7, 256}, 42);
    const int blas_before = blas_threads();
    const auto dw = [&](int threads) {
        set_blas_threads(threads);
        set_num_threads(threads);
        w.zero_grad();
        linear(x, w).backward(g.data());
        Array r = w.grad_array();
        set_num_threads(1);
        set_blas_threads(blas_before);
        return r;
    };
    const Array one = dw(1), two = dw(2);
    CHECK(test::max_abs_diff(one, two) == 0.f);  // the same single-threaded kernel on each row block
}

TEST_SUITE_END();
