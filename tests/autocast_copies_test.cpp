// autocast's bf16 copies (autograd/bf16_weights.hpp): a weight converted once per version, a
// Linear's input once for every layer reading it and kept for dW, a Conv1d's weight once for
// every batch element. The products themselves: tests/autocast_test.cpp.
#include "tests/autocast_util.hpp"
#include "tests/test_util.hpp"

#include <xtgrad/autograd/bf16_weights.hpp>
#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/optim/optimizer.hpp>

#include <algorithm>
#include <string>
#include <vector>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;
using namespace xtgrad::autocast_test;
using test::rnd;

TEST_CASE("autocast converts a Linear's input once for all layers reading it and keeps only that copy for dW") {
    const Bf16Here here;
    if (!here) return;
    // self-attention's W_q, W_k, W_v on one x (40 x 64 x 32: products in bf16)
    const auto three_layers = [](const std::vector<Tensor>& v) {
        return add(mul(linear(v[0], v[1]), linear(v[0], v[2])), linear(v[0], v[3]));
    };
    autocast::clear_weight_cache();
    check_near_fp32(three_layers, {rnd({40, 64}, 50), rnd({32, 64}, 51), rnd({32, 64}, 52), rnd({32, 64}, 53)});
    // the fp32 run converts no input; the bf16 run converts x once for the three layers, and
    // backward (every dW above near fp32's) converts no input again
    CHECK(autocast::weight_cache_stats().activation_conversions == 1);
    CHECK(autocast::weight_cache_stats().activation_hits == 2);

    const Tensor x(rnd({40, 64}, 54).data(), true), w(rnd({32, 64}, 55).data(), true);
    CHECK(linear(x, w).grad_fn()->saved_names() == std::vector<std::string>{"input", "weight"});
    Tensor y;
    {
        const autocast::Scope bf16(DType::bf16);
        y = linear(x, w);
    }
    // under autocast the node keeps the weight, and x only as its bf16 copy (torch's cast)
    CHECK(y.grad_fn()->saved_names() == std::vector<std::string>{"weight"});
    // bf16_min_side raised between forward and backward: dW runs in fp32 on the copy widened,
    // the rounded x forward multiplied: dW = dyᵀ · round(x), dy = 2 y
    {
        const MinSide all_in_fp32(1 << 20);
        sum(mul(y, y)).backward();
    }
    std::vector<float> dy(y.data().begin(), y.data().end()), dw(32 * 64);
    for (float& d : dy) d *= 2.f;
    const std::vector<float> xr = rounded(std::vector<float>(x.data().begin(), x.data().end()));
    gemm(true, false, 32, 64, 40, 1.f, dy.data(), xr.data(), 0.f, dw.data());
    Array expected = empty_array({32, 64});
    std::copy(dw.begin(), dw.end(), expected.begin());
    CHECK(relative_distance(w.grad_array(), expected) < 1e-6);
    autocast::clear_weight_cache();
}

TEST_CASE("autocast converts a weight once per version; an optimizer step's in-place write makes a new copy") {
    const Bf16Here here;
    if (!here) return;
    autocast::clear_weight_cache();
    Tensor w(rnd({48, 64}, 40).data(), true);
    const Tensor x(rnd({40, 64}, 41).data(), true);  // so that backward reads W (dx = dy·W)
    optim::SGD sgd({w}, optim::SGDOptions(0.5));
    const auto forward = [&] {
        const autocast::Scope bf16(DType::bf16);
        return linear(x, w);
    };
    // forward converts W; backward (dx = dy·W) reuses the node's copy; a second forward in the
    // same version finds it in the cache
    Tensor y = forward();
    CHECK(autocast::weight_cache_stats().conversions == 1);
    CHECK(autocast::weight_cache_stats().hits == 0);
    sum(mul(y, y)).backward();
    CHECK(autocast::weight_cache_stats().conversions == 1);
    const Tensor y_again = forward();
    CHECK(autocast::weight_cache_stats().conversions == 1);
    CHECK(autocast::weight_cache_stats().hits == 1);
    CHECK(test::max_abs_diff(y_again.data(), y.data()) == 0.f);
    // the step writes W in place: the old graph's backward refuses (the saved W changed), and
    // the next forward converts the new values, never the stale copy
    const Array w_old = w.data();
    sgd.step();
    REQUIRE(test::max_abs_diff(w.data(), w_old) > 1e-3f);
    test::expect_error([&] { sum(y_again).backward(); }, {"LinearBackward", "modified by an inplace operation"});
    const Tensor y_new = forward();
    CHECK(autocast::weight_cache_stats().conversions == 2);
    CHECK(autocast::weight_cache_stats().entries == 1);  // the old version's copy was replaced
    const Array fresh = linear(rounded(x), rounded(w)).data(), stale = linear(rounded(x), rounded(Tensor(w_old))).data();
    CHECK(relative_distance(y_new.data(), fresh) < 1e-5);
    CHECK(relative_distance(y_new.data(), stale) > 1e-2);
    // its backward uses the new copy too: dx = round(dy) round(W_new)
    Tensor xg(x.data(), true);
    Tensor y2;
    {
        const autocast::Scope bf16(DType::bf16);
        y2 = linear(xg, w);
    }
    sum(y2).backward();  // dy = 1 (exact in bf16)
    CHECK(autocast::weight_cache_stats().conversions == 2);
    CHECK(relative_distance(xg.grad_array(), matmul(Tensor::ones({40, 48}), rounded(w)).data()) < 1e-5);
    // tensors that are not parameters (no grad, or not leaves) are converted per product, not kept
    {
        const autocast::Scope bf16(DType::bf16);
        (void)linear(x, Tensor(w.data()));
        (void)linear(x, mul(w, Tensor::scalar(1.f)));
    }
    CHECK(autocast::weight_cache_stats().conversions == 2);
    // a dead weight's copy goes when a new weight is cached
    {
        const Tensor w2(rnd({48, 64}, 42).data(), true);
        const autocast::Scope bf16(DType::bf16);
        (void)linear(x, w2);
        CHECK(autocast::weight_cache_stats().entries == 2);
    }
    {
        const Tensor w3(rnd({48, 64}, 43).data(), true);
        const autocast::Scope bf16(DType::bf16);
        (void)linear(x, w3);
        CHECK(autocast::weight_cache_stats().entries == 2);  // w and w3; w2's copy dropped
    }
    // linear_rows reads a block of the cached whole-weight copy
    {
        const autocast::Scope bf16(DType::bf16);
        const Tensor block = linear_rows(x, w, Tensor(), 16, 32);
        CHECK(relative_distance(block.data(), linear_rows(rounded(x), rounded(w), Tensor(), 16, 32).data()) < 1e-5);
    }
    autocast::clear_weight_cache();
    CHECK(autocast::weight_cache_stats().entries == 0);
}

TEST_CASE("autocast conv1d converts its weight once for every batch element, forward and backward") {
    const Bf16Here here;
    if (!here) return;
    autocast::clear_weight_cache();
    Tensor w(rnd({96, 64, 1}, 50).data(), true);
    const Tensor x(rnd({4, 64, 40}, 51).data(), true);  // 4 batch elements, each a (96, 40, 64) product
    Tensor y;
    {
        const autocast::Scope bf16(DType::bf16);
        y = conv1d(x, w, Tensor());
    }
    CHECK(autocast::weight_cache_stats().conversions == 1);
    sum(mul(y, y)).backward();  // dx = Wᵀ · dy per element reads the same copy
    CHECK(autocast::weight_cache_stats().conversions == 1);
    CHECK(relative_distance(y.data(), conv1d(rounded(x), rounded(w), Tensor()).data()) < 1e-5);
    // a short sequence's products run in fp32: no copy is made for them
    autocast::clear_weight_cache();
    {
        const autocast::Scope bf16(DType::bf16);
        (void)conv1d(Tensor(rnd({2, 64, 7}, 52).data()), w, Tensor());
    }
    CHECK(autocast::weight_cache_stats().conversions == 0);
    autocast::clear_weight_cache();
}

TEST_SUITE_END();
