// Tutorial B's MultiHeadAttention on the heads where its projections wrote them
// (nn::attention_on_packed_heads, docs/derivations.md "The heads where they sit"): the same
// output and gradients, bit for bit, as the tutorial's split_heads -> attention -> combine_heads
// lines, and which of the two paths each setting takes.
#include <xtgrad/nn/tutorial_b/tutorial_b.hpp>
#include "tests/nn/module_test_util.hpp"

#include <string>
#include <vector>

TEST_SUITE_BEGIN("tutorial_b");

using namespace xtgrad;
namespace tb = xtgrad::nn::tutorial_b;
using test::rnd;

namespace {

test::PathRun run(tb::MultiHeadAttention& mha, const Tensor& Q, const Tensor& K, const Mask* mask, nn::AttentionFusion f) {
    nn::set_attention_fusion(f);
    mha.zero_grad();
    for (const Tensor* t : {&Q, &K}) Tensor(*t).zero_grad();
    const Tensor out = mask ? mha.forward(Q, K, K, *mask) : mha.forward(Q, K, K);
    nn::set_attention_fusion(nn::AttentionFusion::automatic);
    return test::backward_through(out, mha, {&Q, &K});
}

}  // namespace

TEST_CASE("tutorial B: MultiHeadAttention on packed heads equals the tutorial's split path bit for bit") {
    manual_seed(3);
    tb::MultiHeadAttention mha(tb::MultiHeadAttentionOptions(16, 4));
    const Tensor Q = rnd({2, 5, 16}, 1), K = rnd({2, 7, 16}, 2);
    Mask src = Mask::from_shape({2, 1, 1, 7});  // B's src_mask: True = keep; batch 1 hides its last keys
    for (std::size_t j = 0; j < 7; ++j) src(0, 0, 0, j) = true, src(1, 0, 0, j) = j < 4;
    for (const Mask* mask : std::vector<const Mask*>{nullptr, &src}) {
        CAPTURE(mask != nullptr);
        const test::PathRun packed = run(mha, Q, K, mask, nn::AttentionFusion::fused);
        const test::PathRun split = run(mha, Q, K, mask, nn::AttentionFusion::composed);
        CHECK(test::packed_heads_path_differences(packed, split) == "");
    }
}

TEST_CASE("tutorial B: MultiHeadAttention keeps the tutorial's split path where it keeps the weights or composes") {
    manual_seed(4);
    tb::MultiHeadAttention mha(tb::MultiHeadAttentionOptions(8, 2));
    const Tensor Q = rnd({1, 3, 8}, 1);
    // small scores under `automatic`: composed, the split path (each step its own node)
    CHECK(run(mha, Q, Q, nullptr, nn::AttentionFusion::automatic).ops.count("PermuteBackward") == 1);
    // weights kept for a heatmap: the two fused nodes on split heads, and the weights are there
    mha.keep_attention_weights(true);
    const test::PathRun kept = run(mha, Q, Q, nullptr, nn::AttentionFusion::fused);
    CHECK(kept.ops.count("AttentionWeightsBackward") == 1);
    CHECK(kept.ops.count("PermuteBackward") == 1);
    CHECK(mha.attention_weights().shape() == Shape{1, 2, 3, 3});
}

TEST_SUITE_END();
