// The row kernels split over xtgrad's pool (parallel_rows: softmax, log_softmax, layer norm,
// cross-entropy, GELU, dropout's mask, relu_dropout's two masks, permute's copy, a scalar product): forward values and every gradient are bit-identical for
// 1 and 2 threads, at sizes above the split threshold (their gradchecks, on small sizes, check
// them against the definition; this checks that splitting changes nothing).
#include "tests/test_util.hpp"

#include <functional>
#include <string>
#include <vector>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;

namespace {

// Runs make(inputs) forward and backward (with a fixed output gradient) on `threads` threads;
// returns the output and each input's gradient.
std::vector<Array> run(int threads, const std::vector<Shape>& shapes, const std::function<Tensor(const std::vector<Tensor>&)>& make) {
    set_num_threads(threads);
    std::vector<Tensor> in;
    for (std::size_t i = 0; i < shapes.size(); ++i) in.push_back(test::rnd(shapes[i], 70 + i));
    Tensor y = make(in);
    Generator gg(5);
    y.backward(randn(y.shape(), gg).data());
    std::vector<Array> out{y.data()};
    for (const Tensor& t : in) out.push_back(t.grad_array());
    set_num_threads(1);
    return out;
}

// "" when the output and every gradient are bit-identical on 1 and 2 threads; otherwise which ones
// differ ("output", "grad of input 1", ...), so a failing CHECK names them.
std::string differences_1_vs_2_threads(const std::vector<Shape>& shapes,
                                       const std::function<Tensor(const std::vector<Tensor>&)>& make) {
    const std::vector<Array> one = run(1, shapes, make), two = run(2, shapes, make);
    std::string diff;
    for (std::size_t i = 0; i < one.size(); ++i)
        if (!(one[i] == two[i])) diff += (diff.empty() ? "" : ", ") + (i == 0 ? std::string("output") : "grad of input " + std::to_string(i - 1));
    return diff;
}

}  // namespace

TEST_CASE("row kernels give bit-identical results on 1 and 2 threads") {
    // (rows, len) with rows * len well above 2 * kParallelElements: the split path runs.
    SUBCASE("softmax, last axis and a middle axis") {
        CHECK(differences_1_vs_2_threads({{96, 8, 100}}, [](const std::vector<Tensor>& v) { return softmax(v[0], -1); }) == "");
        CHECK(differences_1_vs_2_threads({{96, 100, 8}}, [](const std::vector<Tensor>& v) { return softmax(v[0], 1); }) == "");
    }
    SUBCASE("log_softmax") {
        CHECK(differences_1_vs_2_threads({{800, 130}}, [](const std::vector<Tensor>& v) { return log_softmax(v[0], -1); }) == "");
    }
    SUBCASE("layer norm with weight and bias (dw, db are sums over rows)") {
        CHECK(differences_1_vs_2_threads({{300, 512}, {512}, {512}},
                                         [](const std::vector<Tensor>& v) { return layer_norm(v[0], v[1], v[2]); }) == "");
    }
    SUBCASE("GELU, both forms") {
        CHECK(differences_1_vs_2_threads({{70000}}, [](const std::vector<Tensor>& v) { return gelu(v[0]); }) == "");
        CHECK(differences_1_vs_2_threads({{70000}}, [](const std::vector<Tensor>& v) { return gelu(v[0], GeluApproximation::tanh); }) == "");
    }
    SUBCASE("cross-entropy with ignored rows and label smoothing") {
        Ids target = Ids::from_shape({700});
        for (std::size_t i = 0; i < target.size(); ++i) target(i) = static_cast<std::int64_t>((i * 37) % 101);
        target(3) = 0;
        CHECK(differences_1_vs_2_threads({{700, 101}}, [&](const std::vector<Tensor>& v) {
            return cross_entropy(v[0], target, /*ignore_index=*/0, /*label_smoothing=*/0.1f);
        }) == "");
    }
    SUBCASE("permute (its copy split by output rows, each chunk starting its own odometer)") {
        CHECK(differences_1_vs_2_threads({{20, 32, 8, 64}}, [](const std::vector<Tensor>& v) {
            return permute(v[0], {1, 2, 0, 3});  // split_heads' order: contiguous rows of 64
        }) == "");
        CHECK(differences_1_vs_2_threads({{37, 41, 53}}, [](const std::vector<Tensor>& v) {
            return permute(v[0], {2, 0, 1});  // the last axis moves: strided rows
        }) == "");
        // and equal to the definition: out[a][b][c] = x[b][c][a]
        set_num_threads(2);
        const Tensor x = test::rnd({37, 41, 53}, 9);
        const Array y = permute(x, {2, 0, 1}).data();
        set_num_threads(1);
        bool same = true;
        for (std::size_t a = 0; a < 53; ++a)
            for (std::size_t b = 0; b < 37; ++b)
                for (std::size_t c = 0; c < 41; ++c) same = same && y(a, b, c) == x.data()(b, c, a);
        CHECK(same);
    }
    SUBCASE("a tensor times a scalar, its input used twice (the second gradient adds)") {
        CHECK(differences_1_vs_2_threads({{70000}}, [](const std::vector<Tensor>& v) { return v[0] * 0.125f + v[0] * -3.f; }) == "");
    }
    SUBCASE("dropout: the same mask from the same seed") {
        CHECK(differences_1_vs_2_threads({{70000}}, [](const std::vector<Tensor>& v) {
            Generator g(3);
            return dropout(v[0], 0.1f, true, g);
        }) == "");
    }
    SUBCASE("relu_dropout: the same mask and both bits") {
        CHECK(differences_1_vs_2_threads({{70000}}, [](const std::vector<Tensor>& v) {
            Generator g(3);
            return relu_dropout(v[0], 0.1f, true, g);
        }) == "");
    }
}

TEST_SUITE_END();

TEST_CASE("set_num_threads refuses 0 and more than kMaxThreads, and keeps the pool it had") {
    set_num_threads(2);
    test::expect_error([] { set_num_threads(100000); }, {"set_num_threads: 100000 threads", "1 to 256"});
    test::expect_error([] { set_num_threads(0); }, {"set_num_threads: 0 threads"});
    CHECK(num_threads() == 2);
    set_num_threads(1);
}
