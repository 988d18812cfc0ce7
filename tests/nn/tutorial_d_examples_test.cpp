// Tutorial D (nn/tutorial_d, torch.nn's Transformer): the tutorial's own examples, at its shapes.
#include "tests/nn/tutorial_d_util.hpp"

TEST_SUITE_BEGIN("tutorial_d");

using namespace xtgrad;
using namespace xtgrad::test::tutorial_d;
using test::expect_error;
using test::rnd;

TEST_CASE("tutorial D: the tutorial's examples give the shapes it prints") {
    Generator g(7);
    // 位置编码: torch.Size([2, 4, 10])
    CHECK(positional_encoding(randn({2, 4, 10}, g), 10).shape() == Shape{2, 4, 10});
    // 多头注意力: src (2, 4, 100) -> torch.Size([2, 4, 100]) torch.Size([4, 2, 2])
    MultiheadAttention multihead_attn(100, 4, 0.1f);
    const Tensor src = randn({2, 4, 100}, g);
    const auto [attn_output, attn_output_weights] = multihead_attn.forward(src, src, src);
    CHECK(attn_output.shape() == Shape{2, 4, 100});
    CHECK(attn_output_weights.shape() == Shape{4, 2, 2});
    // Decoder Layer: tgt (20, 32, 512), memory (10, 32, 512) -> torch.Size([20, 32, 512])
    TransformerDecoderLayer decoder_layer(512, 8);
    CHECK(decoder_layer.forward(rand({20, 32, 512}, g), rand({10, 32, 512}, g)).shape() == Shape{20, 32, 512});
}

TEST_SUITE_END();
