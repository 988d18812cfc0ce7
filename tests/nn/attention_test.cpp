// nn::scaled_dot_product_attention (nn/attention.cpp): which graph it builds. Its numbers are
// checked against the composition in tests/ops/attention_test.cpp and against PyTorch by parity.
#include "nn/attention.hpp"
#include "tests/test_util.hpp"

TEST_SUITE_BEGIN("nn");

using namespace xtgrad;

TEST_CASE("scaled_dot_product_attention fuses from kFusedMinScores score elements on, composes below") {
    const auto weights_op = [](std::size_t B) {
        const Tensor q = test::rnd({B, 1, 64, 16}, 1), k = test::rnd({B, 1, 64, 16}, 2), v = test::rnd({B, 1, 64, 16}, 3);
        return nn::scaled_dot_product_attention(q, k, v).weights.grad_fn()->op();
    };
    static_assert(64 * 64 == nn::kFusedMinScores);
    CHECK(weights_op(1) == "AttentionWeightsBackward");
    CHECK(weights_op(0) == "SoftmaxBackward");  // an empty batch: nothing to save
    nn::set_attention_fusion(nn::AttentionFusion::composed);
    CHECK(weights_op(1) == "SoftmaxBackward");
    nn::set_attention_fusion(nn::AttentionFusion::automatic);
    // batch dims that broadcast (q shared by two k, v) always compose
    const Tensor q = test::rnd({1, 100, 16}, 4), k = test::rnd({2, 100, 16}, 5);
    CHECK(nn::scaled_dot_product_attention(q, k, k).weights.grad_fn()->op() == "SoftmaxBackward");
}

TEST_SUITE_END();
