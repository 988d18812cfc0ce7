// layer_norm (autograd/ops/layer_norm.cpp).
#include "tests/reference_gemm.hpp"
#include "tests/test_util.hpp"

#include <xtgrad/autograd/ops/layer_norm.hpp>
#include <xtgrad/threads/parallel.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

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

namespace {
struct LayerNormGrads {
    std::vector<float> dx, dw, db;
};

// layer_norm_backward's kernel on (rows, d) with every gradient fresh (or dx skipped)
LayerNormGrads layer_norm_grads(const std::vector<float>& g, const std::vector<float>& x, const std::vector<float>& w,
                                std::size_t rows, std::size_t d, bool with_dx) {
    std::vector<float> y(rows * d), mean(rows), rstd(rows);
    layer_norm_forward(x.data(), w.data(), nullptr, y.data(), mean.data(), rstd.data(), rows, d, 1e-5f);
    LayerNormGrads out{std::vector<float>(with_dx ? rows * d : 0, -7.f), std::vector<float>(d, -7.f),
                       std::vector<float>(d, -7.f)};
    layer_norm_backward(g.data(), x.data(), w.data(), mean.data(), rstd.data(),
                        with_dx ? GradOut::overwrite(out.dx.data(), rows * d) : GradOut(),
                        GradOut::overwrite(out.dw.data(), d), GradOut::overwrite(out.db.data(), d), rows, d);
    return out;
}
}  // namespace

TEST_CASE("layer_norm_backward: row blocks give the reference's gradients, the same bits on 1 and 2 threads") {
    const std::size_t rows = 300, d = 300;  // five blocks of rows, the last one partial; enough to split
    const std::vector<float> g = test::random_buffer(rows * d, 31), x = test::random_buffer(rows * d, 32),
                             w = test::random_buffer(d, 33);
    // the reference, in double: dxhat = g w; dx = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat))
    std::vector<double> dx(rows * d), dw(d, 0.0), db(d, 0.0);
    for (std::size_t r = 0; r < rows; ++r) {
        double m = 0, v = 0, a = 0, c = 0;
        for (std::size_t j = 0; j < d; ++j) m += x[r * d + j];
        m /= d;
        for (std::size_t j = 0; j < d; ++j) v += (x[r * d + j] - m) * (x[r * d + j] - m);
        const double rs = 1 / std::sqrt(v / d + 1e-5);
        for (std::size_t j = 0; j < d; ++j) {
            const double xh = (x[r * d + j] - m) * rs, dxh = static_cast<double>(g[r * d + j]) * w[j];
            a += dxh / d;
            c += dxh * xh / d;
            dw[j] += g[r * d + j] * xh;
            db[j] += g[r * d + j];
        }
        for (std::size_t j = 0; j < d; ++j) {
            const double xh = (x[r * d + j] - m) * rs;
            dx[r * d + j] = rs * (static_cast<double>(g[r * d + j]) * w[j] - a - xh * c);
        }
    }
    const auto worst = [](const std::vector<float>& got, const std::vector<double>& want) {
        double e = 0;
        for (std::size_t i = 0; i < want.size(); ++i) e = std::max(e, std::abs(got[i] - want[i]) / (1 + std::abs(want[i])));
        return e;
    };
    set_num_threads(1);
    const LayerNormGrads one = layer_norm_grads(g, x, w, rows, d, true);
    set_num_threads(2);
    const LayerNormGrads two = layer_norm_grads(g, x, w, rows, d, true);
    const LayerNormGrads two_no_dx = layer_norm_grads(g, x, w, rows, d, false);
    set_num_threads(1);
    CHECK(worst(one.dx, dx) < 1e-5);
    CHECK(worst(one.dw, dw) < 1e-5);
    CHECK(worst(one.db, db) < 1e-5);
    CHECK(one.dx == two.dx);  // bit for bit: fixed row blocks, added in order
    CHECK(one.dw == two.dw);
    CHECK(one.db == two.db);
    CHECK(two_no_dx.dw == one.dw);  // dx not wanted: the same sums
    CHECK(two_no_dx.db == one.db);

    // into running sums: dx, dw and db added to what the buffers hold
    std::vector<float> y(rows * d), mean(rows), rstd(rows), sum_dx(rows * d, 1.f), sum_dw(d, 2.f), sum_db(d, 3.f);
    layer_norm_forward(x.data(), w.data(), nullptr, y.data(), mean.data(), rstd.data(), rows, d, 1e-5f);
    layer_norm_backward(g.data(), x.data(), w.data(), mean.data(), rstd.data(), GradOut::add_into(sum_dx.data(), rows * d),
                        GradOut::add_into(sum_dw.data(), d), GradOut::add_into(sum_db.data(), d), rows, d);
    for (double& e : dx) e += 1;
    for (double& e : dw) e += 2;
    for (double& e : db) e += 3;
    CHECK(worst(sum_dx, dx) < 1e-5);
    CHECK(worst(sum_dw, dw) < 1e-5);
    CHECK(worst(sum_db, db) < 1e-5);
}

TEST_SUITE_END();

TEST_CASE("layer_norm: a variance past float's range gives NaN as torch's does, not finite zeros") {
    Tensor x = Tensor::from_vector({3e38f, -3e38f, 0.f, 1.f}, {1, 4});
    Tensor y = layer_norm(x, {}, {}, 1e-5f);
    for (std::size_t j = 0; j < 4; ++j) CHECK(std::isnan(y.data()(0, j)));
}

TEST_CASE("layer_norm: an eps that is negative or not finite is refused (it could only give NaN)") {
    const Tensor x = Tensor::from_vector({1.f, 1.f}, {1, 2});  // variance 0: eps is the whole denominator
    for (float eps : {-1.f, std::nanf(""), INFINITY})
        test::expect_error([&] { layer_norm(x, {}, {}, eps); }, {"layer_norm: eps must be a finite number >= 0"});
    CHECK_NOTHROW(layer_norm(x + Tensor::from_vector({0.f, 1.f}, {1, 2}), {}, {}, 0.f));  // torch allows 0
}
