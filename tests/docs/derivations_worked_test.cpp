// docs/derivations.md's worked examples, number by number: LayerNorm and attention backward on
// 2x3 inputs small enough to follow by hand and in gdb (docs/gdb/worked_examples.gdb stops in
// these two tests). Each value below is one the page shows, to its 4 printed decimals.
#include "tests/test_util.hpp"

#include <cmath>
#include <vector>

TEST_SUITE_BEGIN("docs");

using namespace xtgrad;

namespace {
// Every element of got within 5e-5 of the page's 4-decimal value.
void expect_shown(const Array& got, const std::vector<float>& shown) {
    REQUIRE(got.size() == shown.size());
    for (std::size_t i = 0; i < shown.size(); ++i) {
        const float value = got.data()[i];
        CAPTURE(i);
        CAPTURE(value);
        CHECK(std::abs(value - shown[i]) <= 5e-5f);
    }
}
}  // namespace

TEST_CASE("derivations worked: LayerNorm on 2x3") {
    Tensor x = Tensor::from_vector({1, 2, 3, -1, 0, 4}, {2, 3}, true);
    Tensor w = Tensor::ones({3}, true), b = Tensor::zeros({3}, true);
    Tensor y = layer_norm(x, w, b);
    expect_shown(y.data(), {-1.2247f, 0.f, 1.2247f, -0.9258f, -0.4629f, 1.3887f});  // x̂ (w = 1, b = 0)
    y.backward(Tensor::from_vector({1, 0, 0, 0, 0, 1}, {2, 3}).data());
    expect_shown(x.grad_array(), {0.2041f, -0.4082f, 0.2041f, 0.0441f, -0.0551f, 0.0110f});
    expect_shown(w.grad_array(), {-1.2247f, 0.f, 1.3887f});
    expect_shown(b.grad_array(), {1.f, 0.f, 1.f});
}

TEST_CASE("derivations worked: attention on 2x3 with a causal mask") {
    Tensor q = Tensor::from_vector({1, 0, 1, 0, 1, 0}, {2, 3}, true);
    Tensor k = Tensor::from_vector({1, 1, 0, 0, 0, 1}, {2, 3}, true);
    Tensor v = Tensor::from_vector({1, 2, 0, 0, 1, -1}, {2, 3}, true);
    Mask causal = xt::zeros<bool>({2, 2});
    causal(0, 1) = true;  // query 0 may not look at key 1
    nn::AttentionOptions o;
    o.scale = 1.f;  // 1 to keep the numbers short; the arithmetic is the same for any scale
    o.masked = &causal;
    nn::AttentionResult r = nn::scaled_dot_product_attention_composed(q, k, v, o);
    expect_shown(r.weights.data(), {1.f, 0.f, 0.7311f, 0.2689f});
    expect_shown(r.context.data(), {1.f, 2.f, 0.f, 0.7311f, 1.7311f, -0.2689f});
    r.context.backward(Tensor::from_vector({1, 0, 0, 0, 1, 0}, {2, 3}).data());
    expect_shown(v.grad_array(), {1.f, 0.7311f, 0.f, 0.f, 0.2689f, 0.f});
    expect_shown(q.grad_array(), {0.f, 0.f, 0.f, 0.1966f, 0.1966f, -0.1966f});
    expect_shown(k.grad_array(), {0.f, 0.1966f, 0.f, 0.f, -0.1966f, 0.f});
}

TEST_SUITE_END();
