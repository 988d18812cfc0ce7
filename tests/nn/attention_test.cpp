// nn::scaled_dot_product_attention (nn/attention.cpp): which graph it builds. Its numbers are
// checked against the composition in tests/ops/attention_test.cpp and against PyTorch by parity.
#include <xtgrad/nn/attention.hpp>
#include "tests/test_util.hpp"

#include <limits>

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

TEST_CASE("scaled_dot_product_attention: a NaN or negative dropout is refused on both paths") {
    Tensor q = test::rnd({1, 2, 4}, 1), k = test::rnd({1, 3, 4}, 2), v = test::rnd({1, 3, 4}, 3);
    for (float p : {std::numeric_limits<float>::quiet_NaN(), -0.1f, 1.5f}) {
        nn::AttentionOptions o;
        o.dropout = p;
        o.training = true;
        test::expect_error([&] { (void)nn::scaled_dot_product_attention_composed(q, k, v, o); },
                           {"scaled_dot_product_attention", "dropout"});
        test::expect_error([&] { (void)nn::scaled_dot_product_attention(q, k, v, o); },
                           {"scaled_dot_product_attention", "dropout"});
    }
}
