// Column sums (autograd/reduce_kernels.hpp, add_column_sums): eight rows at a time, yet every sum
// added in row order, so the bits are a row-by-row loop's, for a Linear's bias gradient and for
// sum_keepdim over the leading axes (a broadcast bias's gradient), on 1 and 2 threads.
#include "tests/test_util.hpp"

#include <xtgrad/autograd/reduce_kernels.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <utility>
#include <vector>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;

namespace reduce_kernels_test {

// d[j] += y[i, j], one row after another: the order the kernel must keep
void row_by_row(const float* y, std::size_t rows, std::size_t cols, std::size_t j0, std::size_t j1, float* d) {
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = j0; j < j1; ++j) d[j] += y[i * cols + j];
}

// values whose sums depend on their order: magnitudes from 1e-4 to 1e4, both signs
std::vector<float> mixed(std::size_t n, unsigned seed) {
    std::vector<float> v(n);
    for (std::size_t k = 0; k < n; ++k) {
        const unsigned h = (static_cast<unsigned>(k) + seed) * 2654435761u;
        v[k] = static_cast<float>(std::ldexp(1.0 + (h % 1000) / 1000.0, static_cast<int>(h % 27) - 13)) * ((h >> 7) % 2 ? 1.f : -1.f);
    }
    return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    for (std::size_t k = 0; k < a.size(); ++k)
        if (std::memcmp(&a[k], &b[k], sizeof(float)) != 0) return false;
    return a.size() == b.size();
}

}  // namespace reduce_kernels_test

using namespace reduce_kernels_test;

TEST_CASE("add_column_sums adds the rows in their order: a row-by-row loop's bits") {
    for (std::size_t rows : {0, 1, 7, 8, 9, 16, 17, 63}) {
        for (std::size_t cols : {1, 5, 33}) {
            const std::vector<float> y = mixed(rows * cols, static_cast<unsigned>(rows * 31 + cols));
            for (const auto& span : {std::pair<std::size_t, std::size_t>{0, cols}, {cols / 3, cols - cols / 4}}) {
                const std::size_t j0 = span.first, j1 = span.second;  // not a binding: CAPTURE's lambda takes them
                CAPTURE(rows);
                CAPTURE(cols);
                CAPTURE(j0);
                CAPTURE(j1);
                std::vector<float> want = mixed(cols, 99), got = want;  // d starts nonzero: it adds to d
                row_by_row(y.data(), rows, cols, j0, j1, want.data());
                add_column_sums(y.data(), rows, cols, j0, j1, got.data());
                CHECK(same_bits(got, want));
            }
        }
    }
    // the data tells orders apart: eight rows summed first, then added, gives other bits
    const std::size_t rows = 64, cols = 33;
    const std::vector<float> y = mixed(rows * cols, 5);
    std::vector<float> in_order(cols, 0.f), blocks_first(cols, 0.f);
    row_by_row(y.data(), rows, cols, 0, cols, in_order.data());
    for (std::size_t i = 0; i < rows; i += 8) {
        std::vector<float> block(cols, 0.f);
        row_by_row(y.data() + i * cols, 8, cols, 0, cols, block.data());
        for (std::size_t j = 0; j < cols; ++j) blocks_first[j] += block[j];
    }
    CHECK_FALSE(same_bits(in_order, blocks_first));
}

TEST_CASE("sum_keepdim over the leading axes (a broadcast bias's gradient) keeps the row order") {
    const std::vector<float> v = mixed(6 * 7 * 9, 3);
    Array x = empty_array({6, 7, 9});
    std::copy(v.begin(), v.end(), x.data());
    std::vector<float> want(9, 0.f);
    row_by_row(v.data(), 42, 9, 0, 9, want.data());
    const Array s = sum_keepdim(x, {0, 1});
    CHECK(shape_of(s) == Shape{1, 1, 9});
    CHECK(same_bits(std::vector<float>(s.data(), s.data() + 9), want));
    // one leading axis of two: the general walk, the same order per output
    const Array s0 = sum_keepdim(x, {0});
    CHECK(shape_of(s0) == Shape{1, 7, 9});
    for (std::size_t r = 0; r < 7; ++r)
        for (std::size_t j = 0; j < 9; ++j) {
            float w = 0.f;
            for (std::size_t b = 0; b < 6; ++b) w += v[(b * 7 + r) * 9 + j];
            CHECK(s0.data()[r * 9 + j] == w);
        }
}

TEST_CASE("a Linear's bias gradient is dy's rows added in order, on 1 and 2 threads") {
    // (300, 512): 153,600 elements, above the pool's split, so two threads share the columns
    const std::size_t rows = 300, in = 16, out = 512;
    const std::vector<float> dy = mixed(rows * out, 11);
    std::vector<float> want(out, 0.f);
    row_by_row(dy.data(), rows, out, 0, out, want.data());
    Array g = empty_array({rows, out});
    std::copy(dy.begin(), dy.end(), g.data());
    for (int threads : {1, 2}) {
        CAPTURE(threads);
        set_num_threads(threads);
        Tensor x = test::rnd({rows, in}, 1), w = test::rnd({out, in}, 2), b = test::rnd({out}, 3);
        linear(x, w, b).backward(g);
        const Array db = b.grad_array();
        CHECK(same_bits(std::vector<float>(db.data(), db.data() + out), want));
        set_num_threads(1);
    }
}

TEST_SUITE_END();
