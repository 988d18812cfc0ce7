// Tutorial D's MultiheadAttention on the heads where its in-projection writes them
// (nn/tutorial_d/functional.cpp, on_packed_heads): no batch-first transposes, no split or merge
// copies, and the same output and input gradients, bit for bit, as the lines that follow torch's
// (transpose, project, split_heads, attention, merge_heads, out_proj, transpose back; the weight
// gradients sequence first to float rounding); sequence first and batch first,
// with a float causal mask, a key padding mask and dropout in training.
#include "tests/nn/module_test_util.hpp"
#include "tests/nn/tutorial_d_util.hpp"

#include <string>
#include <vector>

TEST_SUITE_BEGIN("tutorial_d");

using namespace xtgrad;
using namespace xtgrad::test::tutorial_d;
using test::rnd;

namespace {

// One training forward and backward of m on (query, kv), the dropout drawn from seed 11.
test::PathRun run(const MultiheadAttention& m, const Tensor& query, const Tensor& kv, const AttentionMask& padding,
           const AttentionMask& attn, bool need_weights, nn::AttentionFusion f) {
    for (const Tensor* t : {&query, &kv}) Tensor(*t).zero_grad();
    for (Tensor p : m.parameters()) p.zero_grad();
    manual_seed(11);
    nn::set_attention_fusion(f);
    const Tensor out = m.forward(query, kv, kv, padding, need_weights, attn).attn_output;
    nn::set_attention_fusion(nn::AttentionFusion::automatic);
    return test::backward_through(out, m, {&query, &kv});
}


}  // namespace

TEST_CASE("tutorial D: MultiheadAttention on packed heads equals torch's lines bit for bit, either layout") {
    const std::size_t N = 3, L = 5, S = 6, E = 16;
    Array causal = xt::zeros<float>({L, S});  // a float mask: -inf above the diagonal
    for (std::size_t i = 0; i < L; ++i)
        for (std::size_t j = i + 2; j < S; ++j) causal(i, j) = -kInf;
    for (bool batch_first : {false, true}) {
        CAPTURE(batch_first);
        manual_seed(2);
        MultiheadAttention m(E, 4, 0.25f, true, false, false, 0, 0, batch_first);
        randomize(m, 3);
        m.train();
        const Tensor query = batch_first ? rnd({N, L, E}, 1) : rnd({L, N, E}, 1);
        const Tensor kv = batch_first ? rnd({N, S, E}, 2) : rnd({S, N, E}, 2);
        const std::size_t rounded = batch_first ? 0 : m.parameters().size();
        const test::PathRun packed = run(m, query, kv, padding_mask(N, S, 4), Tensor(causal), false, nn::AttentionFusion::fused);
        const test::PathRun split = run(m, query, kv, padding_mask(N, S, 4), Tensor(causal), false, nn::AttentionFusion::composed);
        CHECK(test::packed_heads_path_differences(packed, split, rounded) == "");
        // no masks, evaluation (no dropout)
        m.eval();
        const test::PathRun packed_eval = run(m, query, kv, {}, {}, false, nn::AttentionFusion::fused);
        const test::PathRun split_eval = run(m, query, kv, {}, {}, false, nn::AttentionFusion::composed);
        CHECK(test::packed_heads_path_differences(packed_eval, split_eval, rounded) == "");
    }
}

TEST_CASE("tutorial D: MultiheadAttention keeps torch's lines where the weights are wanted or the options need them") {
    manual_seed(2);
    const Tensor query = rnd({5, 3, 16}, 1);
    MultiheadAttention plain(16, 4);
    // need_weights (torch's default): the weights are returned, from the split heads
    const test::PathRun wanted = run(plain, query, query, {}, {}, true, nn::AttentionFusion::fused);
    CHECK(wanted.ops.count("AttentionContextBackward") == 0);
    CHECK(wanted.ops.count("PermuteBackward") == 1);
    // add_bias_kv appends a learned key to the split heads: torch's lines
    MultiheadAttention bias_kv(16, 4, 0.f, true, /*add_bias_kv=*/true);
    const test::PathRun appended = run(bias_kv, query, query, {}, {}, false, nn::AttentionFusion::fused);
    CHECK(appended.ops.count("PermuteBackward") == 1);
}

TEST_SUITE_END();
