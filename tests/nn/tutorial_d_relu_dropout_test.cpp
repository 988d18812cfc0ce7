// Tutorial D's feed-forward, linear2(dropout(relu(linear1(x)))), with relu and dropout as one
// relu_dropout node (Dropout::forward_relu): the same output and gradients bit for bit as the two
// nodes, the composition below nn::kFusedMinReluDropout elements and wherever a forward hook on
// the dropout module could see relu's output, and never for another activation.
#include "tests/nn/module_test_util.hpp"
#include "tests/nn/tutorial_d_util.hpp"

#include <string>
#include <vector>

TEST_SUITE_BEGIN("tutorial_d");

using namespace xtgrad;
using namespace xtgrad::test::tutorial_d;
using test::rnd;

namespace {

test::PathRun run(const TransformerEncoderLayer& layer, const Tensor& src, nn::ReluDropoutFusion f) {
    Tensor(src).zero_grad();
    for (Tensor p : layer.parameters()) p.zero_grad();
    manual_seed(12);
    nn::set_relu_dropout_fusion(f);
    const Tensor out = layer.forward(src);
    nn::set_relu_dropout_fusion(nn::ReluDropoutFusion::automatic);
    return test::backward_through(out, layer, {&src});
}

bool same(const test::PathRun& a, const test::PathRun& b) {
    if (!(a.out == b.out) || a.grads.size() != b.grads.size()) return false;
    for (std::size_t i = 0; i < a.grads.size(); ++i)
        if (!(a.grads[i] == b.grads[i])) return false;
    return true;
}

}  // namespace

TEST_CASE("tutorial D: the feed-forward's relu and dropout as one node give the two nodes' numbers") {
    for (const int threads : {1, 2}) {
        set_num_threads(threads);
        manual_seed(3);
        TransformerEncoderLayer layer(16, 4, 64, 0.25f);
        randomize(layer, 4);
        layer.train();
        const Tensor src = rnd({7, 3, 16}, 5);
        const test::PathRun fused = run(layer, src, nn::ReluDropoutFusion::fused);
        const test::PathRun composed = run(layer, src, nn::ReluDropoutFusion::composed);
        CAPTURE(threads);
        CHECK(fused.ops.count("ReluDropoutBackward") == 1);
        CHECK(fused.ops.count("ReluBackward") == 0);
        CHECK(composed.ops.count("ReluDropoutBackward") == 0);
        CHECK(composed.ops.count("ReluBackward") == 1);
        CHECK(same(fused, composed));
        // the decoder layer's feed-forward too
        manual_seed(3);
        TransformerDecoderLayer dec(16, 4, 64, 0.25f);
        randomize(dec, 6);
        const Tensor memory = rnd({5, 3, 16}, 7);
        std::vector<Array> outs;
        for (const auto f : {nn::ReluDropoutFusion::fused, nn::ReluDropoutFusion::composed}) {
            manual_seed(13);
            nn::set_relu_dropout_fusion(f);
            const Tensor out = dec.forward(src, memory);
            CHECK(test::ops_behind(out).count("ReluDropoutBackward") == (f == nn::ReluDropoutFusion::fused ? 1u : 0u));
            outs.push_back(out.data());
        }
        nn::set_relu_dropout_fusion(nn::ReluDropoutFusion::automatic);
        CHECK(outs[0] == outs[1]);
    }
    set_num_threads(1);
}

TEST_CASE("tutorial D: automatic fusion composes small feed-forwards, in eval, with a hook, or another activation") {
    manual_seed(3);
    TransformerEncoderLayer small(16, 4, 64, 0.25f);  // 7 x 3 x 64 hidden elements: under the threshold
    CHECK(7 * 3 * 64 < nn::kFusedMinReluDropout);
    CHECK(test::ops_behind(small.forward(rnd({7, 3, 16}, 1))).count("ReluBackward") == 1);

    TransformerEncoderLayer big(16, 4, 2048, 0.25f);  // 8 x 4 x 2048: over it
    CHECK(8 * 4 * 2048 >= nn::kFusedMinReluDropout);
    const Tensor src = rnd({8, 4, 16}, 2);
    CHECK(test::ops_behind(big.forward(src)).count("ReluDropoutBackward") == 1);

    // a forward hook on the dropout module sees relu's output, as without fusion
    std::vector<Array> seen;
    auto handle = big.dropout->register_forward_hook(
        [&](const nn::Module&, const std::vector<Tensor>& in, const std::vector<Tensor>&) { seen.push_back(in[0].data()); });
    const Tensor hooked = big.forward(src);
    REQUIRE(seen.size() == 1);
    CHECK(xt::all(xt::greater_equal(seen[0], 0.f)));  // relu's output
    CHECK(test::ops_behind(hooked).count("ReluDropoutBackward") == 0);
    handle.remove();
    CHECK(test::ops_behind(big.forward(src)).count("ReluDropoutBackward") == 1);  // fused again
    auto pre = big.dropout->register_forward_pre_hook([&](const nn::Module&, const std::vector<Tensor>& in) {
        seen.push_back(in[0].data());
    });
    CHECK(test::ops_behind(big.forward(src)).count("ReluDropoutBackward") == 0);  // a pre-hook sees relu's output too
    REQUIRE(seen.size() == 2);
    CHECK(xt::all(xt::greater_equal(seen[1], 0.f)));
    pre.remove();

    big.eval();  // no dropout: relu alone
    const auto eval_ops = test::ops_behind(big.forward(src));
    CHECK(eval_ops.count("ReluDropoutBackward") == 0);
    CHECK(eval_ops.count("ReluBackward") == 1);
    big.train();

    // gelu, or a function of one's own named "relu", is never fused
    for (const Activation& a : {Activation::gelu, Activation("relu", [](const Tensor& x) { return relu(x); })}) {
        TransformerEncoderLayer other(TransformerEncoderLayerOptions(16, 4).dim_feedforward(2048).activation(a));
        CHECK(test::ops_behind(other.forward(src)).count("ReluDropoutBackward") == 0);
    }
    nn::set_relu_dropout_fusion(nn::ReluDropoutFusion::fused);
    CHECK(test::ops_behind(small.forward(rnd({7, 3, 16}, 1))).count("ReluDropoutBackward") == 1);
    nn::set_relu_dropout_fusion(nn::ReluDropoutFusion::automatic);
}

TEST_SUITE_END();
