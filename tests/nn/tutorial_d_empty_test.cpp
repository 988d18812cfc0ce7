// Tutorial D (nn/tutorial_d, torch.nn's Transformer): a batch of 0 and sequences of length 0
// pass through every module with the shapes torch 1.13 gives (checked against torch when this
// file was written), forward and backward; attention over 0 keys gives out_proj's bias, as torch.
#include "tests/nn/tutorial_d_util.hpp"

TEST_SUITE_BEGIN("tutorial_d");

using namespace xtgrad;
using namespace xtgrad::test::tutorial_d;
using test::rnd;

namespace {

// Forward, then backward of sum(y): no throw, and every input gets a gradient of its own shape.
Tensor through(const std::function<Tensor(const V&)>& f, V inputs) {
    for (Tensor& x : inputs) x.requires_grad_(true);
    Tensor y = f(inputs);
    sum(y).backward();
    for (const Tensor& x : inputs) {
        REQUIRE(x.grad().defined());
        CHECK(x.grad().shape() == x.shape());
    }
    return y;
}

Mask no_padding(std::size_t N, std::size_t S) { return xt::zeros<bool>({N, S}); }

}  // namespace

TEST_CASE("tutorial D, empty inputs: positional_encoding, scaled_dot_product_attention, the in-projection") {
    CHECK(through([](const V& x) { return positional_encoding(x[0], 8, 0.f); }, {rnd({0, 4, 8})}).shape() == Shape{0, 4, 8});
    CHECK(through([](const V& x) { return positional_encoding(x[0], 8, 0.f); }, {rnd({2, 0, 8})}).shape() == Shape{2, 0, 8});
    const Tensor ctx = through([](const V& x) { return scaled_dot_product_attention(x[0], x[1], x[2]).context; },
                               {rnd({4, 3, 5}), rnd({4, 0, 5}), rnd({4, 0, 5})});
    CHECK(ctx.shape() == Shape{4, 3, 5});
    CHECK(xt::amax(xt::abs(ctx.data()))() == 0.f);  // no keys: the weighted sum is empty
    const Tensor x = rnd({0, 2, 8});
    const InProjection p = in_projection_packed(x, x, x, rnd({24, 8}));
    CHECK(p.v.shape() == Shape{0, 2, 8});
}

TEST_CASE("tutorial D, empty inputs: MultiheadAttention with N, L or S = 0, as torch") {
    MultiheadAttention m(8, 2);
    randomize(m, 1);
    const auto attend = [&](std::size_t L, std::size_t N, std::size_t S) {
        MultiheadAttention::Output out;
        through([&](const V& a) {
            out = m.forward(a[0], a[1], a[1], no_padding(N, S));
            return out.attn_output;
        }, {rnd({L, N, 8}), rnd({S, N, 8})});
        return out;
    };
    SUBCASE("batch 0") {
        const auto out = attend(3, 0, 4);
        CHECK(out.attn_output.shape() == Shape{3, 0, 8});
        CHECK(out.attn_output_weights.shape() == Shape{0, 3, 4});
    }
    SUBCASE("no queries") {
        const auto out = attend(0, 2, 4);
        CHECK(out.attn_output.shape() == Shape{0, 2, 8});
        CHECK(out.attn_output_weights.shape() == Shape{2, 0, 4});
    }
    SUBCASE("no keys: the output is out_proj's bias") {
        const auto out = attend(3, 2, 0);
        CHECK(out.attn_output.shape() == Shape{3, 2, 8});
        CHECK(out.attn_output_weights.shape() == Shape{2, 3, 0});
        for (std::size_t e = 0; e < 8; ++e) CHECK(out.attn_output.data()(2, 1, e) == m.out_proj->bias.data()(e));
    }
    SUBCASE("no keys, but bias_k and the zero key") {
        MultiheadAttention extra(MultiheadAttentionOptions(8, 2).add_bias_kv(true).add_zero_attn(true));
        const Tensor q = rnd({3, 2, 8}), k = rnd({0, 2, 8});
        CHECK(extra.forward(q, k, k).attn_output_weights.shape() == Shape{2, 3, 2});
    }
}

TEST_CASE("tutorial D, empty inputs: the layers, the stacks and the Transformer, as torch") {
    const TransformerEncoderLayer enc_layer(small_layer());
    const TransformerDecoderLayer dec_layer(small_layer<TransformerDecoderLayerOptions>());
    CHECK(through([&](const V& x) { return enc_layer.forward(x[0]); }, {rnd({0, 2, 8})}).shape() == Shape{0, 2, 8});
    CHECK(through([&](const V& x) { return enc_layer.forward(x[0]); }, {rnd({5, 0, 8})}).shape() == Shape{5, 0, 8});
    CHECK(through([&](const V& x) { return dec_layer.forward(x[0], x[1]); }, {rnd({4, 2, 8}), rnd({0, 2, 8})}).shape() ==
          Shape{4, 2, 8});
    CHECK(through([&](const V& x) { return dec_layer.forward(x[0], x[1]); }, {rnd({0, 2, 8}), rnd({5, 2, 8})}).shape() ==
          Shape{0, 2, 8});
    const TransformerEncoder encoder(enc_layer, 2, std::make_shared<nn::LayerNorm>(8));
    CHECK(through([&](const V& x) { return encoder.forward(x[0]); }, {rnd({0, 2, 8})}).shape() == Shape{0, 2, 8});
    const TransformerDecoder decoder(dec_layer, 2, std::make_shared<nn::LayerNorm>(8));
    CHECK(through([&](const V& x) { return decoder.forward(x[0], x[1]); }, {rnd({4, 0, 8}), rnd({5, 0, 8})}).shape() ==
          Shape{4, 0, 8});

    Transformer model(small_transformer());
    const auto run = [&](std::size_t S, std::size_t N, std::size_t T) {
        return through([&](const V& x) { return model.forward(x[0], x[1]); }, {rnd({S, N, 8}), rnd({T, N, 8})}).shape();
    };
    CHECK(run(5, 0, 4) == Shape{4, 0, 8});  // batch 0
    CHECK(run(0, 2, 3) == Shape{3, 2, 8});  // no source: the decoder's cross-attention has no keys
    CHECK(run(5, 2, 0) == Shape{0, 2, 8});  // no target
}

TEST_SUITE_END();
