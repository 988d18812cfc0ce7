// Tutorial D's unbatched (2-D) inputs, as torch 1.13 takes them: every module gives the batched
// result of a batch of 1 with the batch axis squeezed out, passes gradcheck, and refuses mixed
// ranks with torch's wording. Parity with torch: the *__unbatched fixtures (tests/parity_test.cpp).
#include "tests/nn/tutorial_d_util.hpp"

#include <xtgrad/autograd/ops.hpp>

TEST_SUITE_BEGIN("tutorial_d");

using namespace xtgrad;
using namespace xtgrad::test::tutorial_d;
using test::expect_error;
using test::max_abs_diff;
using test::rnd;

namespace {

Mask last_key_padded(std::size_t S) {
    Mask m = xt::zeros<bool>({S});
    m(S - 1) = true;
    return m;
}

// x (L, E) -> (L, 1, E), or (1, L, E) batch first: the batch of one torch runs an unbatched input as.
Tensor batch_of_one(const Tensor& x, bool batch_first = false) { return unsqueeze(x, batch_first ? 0 : 1); }

Mask as_row(Mask m) {  // (S) -> (1, S)
    m.reshape({1, m.size()});
    return m;
}

void check_same(const Tensor& unbatched, const Tensor& batched, int batch_axis) {
    REQUIRE(unbatched.shape() == squeeze(batched, batch_axis).shape());
    CHECK(max_abs_diff(unbatched.data(), squeeze(batched, batch_axis).data()) == 0.f);
}

}  // namespace

TEST_CASE("tutorial D: MultiheadAttention takes unbatched query (L, E), key and value (S, E), masks (S) and (L, S)") {
    for (const bool batch_first : {false, true}) {  // torch: batch_first does not apply to unbatched input
        CAPTURE(batch_first);
        MultiheadAttention m(MultiheadAttentionOptions(8, 2).batch_first(batch_first));
        randomize(m, 3);
        const Tensor q = rnd({4, 8}, 1), k = rnd({5, 8}, 2), v = rnd({5, 8}, 3);
        Mask causal = xt::zeros<bool>({4, 5});
        causal(0, 3) = causal(0, 4) = true;
        const Mask pad = last_key_padded(5);
        const auto [out, weights] = m.forward(q, k, v, pad, true, causal);
        CHECK(out.shape() == Shape{4, 8});
        CHECK(weights.shape() == Shape{4, 5});
        const Mask pad_batch = as_row(pad);
        const auto [out_b, weights_b] = m.forward(batch_of_one(q, batch_first), batch_of_one(k, batch_first),
                                                  batch_of_one(v, batch_first), pad_batch, true, causal);
        check_same(out, out_b, batch_first ? 0 : 1);
        check_same(weights, weights_b, 0);
        for (std::size_t i = 0; i < 4; ++i) CHECK(weights.data()(i, 4) == 0.f);  // the padded key

        // per head: (num_heads, L, S); a 3-D attn_mask is (num_heads, L, S)
        Array bias = xt::zeros<float>({2, 4, 5});
        bias(1, 2, 0) = -kInf;
        const Tensor per_head = m.forward(q, k, v, {}, true, Tensor(bias), false).attn_output_weights;
        CHECK(per_head.shape() == Shape{2, 4, 5});
        CHECK(per_head.data()(1, 2, 0) == 0.f);
        CHECK(per_head.data()(0, 2, 0) > 0.f);
    }
}

TEST_CASE("tutorial D: the docs' unbatched example (docs/tutorial_d.md, Unbatched inputs)") {
    Generator& gen = default_generator();
    MultiheadAttention mha(8, 2);
    Tensor query = randn({4, 8}, gen), memory = randn({5, 8}, gen);   // (L, E), (S, E)
    Mask padded = xt::zeros<bool>({5});
    padded(4) = true;                                                  // key_padding_mask (S)
    auto [out, weights] = mha.forward(query, memory, memory, padded); // out (4, 8), weights (4, 5)
    CHECK(out.shape() == Shape{4, 8});
    CHECK(weights.shape() == Shape{4, 5});
    for (std::size_t i = 0; i < 4; ++i) CHECK(weights.data()(i, 4) == 0.f);
}

TEST_CASE("tutorial D: unbatched MultiheadAttention and multi_head_attention_forward pass gradcheck") {
    MultiheadAttention m(MultiheadAttentionOptions(8, 2).add_bias_kv(true).add_zero_attn(true));
    randomize(m, 5);
    const Mask pad = last_key_padded(5);
    CHECK(gradcheck([&](const V& x) { return m.forward(x[0], x[1], x[2], pad).attn_output; },
                    with_parameters({rnd({4, 8}, 6), rnd({5, 8}, 7), rnd({5, 8}, 8)}, m)));
    const Tensor x = rnd({5, 8}, 9);  // self-attention: one tensor is query, key and value
    CHECK(gradcheck([&](const V& t) { return m.forward(t[0], t[0], t[0], pad).attn_output; }, with_parameters({x}, m)));
    MultiheadAttention kv(MultiheadAttentionOptions(8, 2).kdim(3).vdim(6));
    const auto [out, weights] = kv.forward(rnd({4, 8}, 1), rnd({5, 3}, 2), rnd({5, 6}, 3));
    CHECK(out.shape() == Shape{4, 8});
    CHECK(weights.shape() == Shape{4, 5});
}

TEST_CASE("tutorial D: unbatched layers, stacks and Transformer give the batch of one's result and pass gradcheck") {
    const Tensor src = rnd({5, 8}, 11), tgt = rnd({4, 8}, 12);
    const Mask src_pad = last_key_padded(5), src_pad_b = as_row(src_pad);
    const Tensor causal = Transformer::generate_square_subsequent_mask(4);

    TransformerEncoderLayer enc_layer(small_layer());
    randomize(enc_layer, 13);
    check_same(enc_layer.forward(src, {}, src_pad), enc_layer.forward(batch_of_one(src), {}, src_pad_b), 1);

    TransformerDecoderLayer dec_layer(small_layer<TransformerDecoderLayerOptions>(true));  // batch_first ignored
    randomize(dec_layer, 14);
    check_same(dec_layer.forward(tgt, src, causal, {}, {}, src_pad),
               dec_layer.forward(batch_of_one(tgt, true), batch_of_one(src, true), causal, {}, {}, src_pad_b), 0);

    TransformerEncoder encoder(enc_layer, 2, std::make_shared<nn::LayerNorm>(8));  // the encoding on (S, E) too
    check_same(encoder.forward(src, {}, src_pad), encoder.forward(batch_of_one(src), {}, src_pad_b), 1);
    CHECK(gradcheck([&](const V& x) { return encoder.forward(x[0], {}, src_pad); }, with_parameters({src}, encoder),
                    test::model_gradcheck()));

    TransformerDecoder decoder(dec_layer, 2);
    check_same(decoder.forward(tgt, src, causal), decoder.forward(batch_of_one(tgt, true), batch_of_one(src, true), causal), 0);

    Transformer model(small_transformer().activation(Activation::gelu));  // smooth for finite differences
    randomize(model, 15);
    const Tensor y = model.forward(src, tgt, {}, causal, {}, src_pad, {}, src_pad);
    CHECK(y.shape() == Shape{4, 8});
    check_same(y, model.forward(batch_of_one(src), batch_of_one(tgt), {}, causal, {}, src_pad_b, {}, src_pad_b), 1);
    CHECK(gradcheck([&](const V& x) { return model.forward(x[0], x[1], {}, causal, {}, src_pad, {}, src_pad); },
                    with_parameters({src, tgt}, model), test::model_gradcheck()));
}

TEST_CASE("tutorial D: unbatched inputs of the wrong ranks or shapes are refused with torch's wording") {
    MultiheadAttention m(8, 2);
    const Tensor q = rnd({4, 8}), k = rnd({5, 8}), v = rnd({5, 8});
    expect_error([&] { m.forward(q, rnd({5, 1, 8}), rnd({5, 1, 8})); },
                 {"MultiheadAttention", "For unbatched (2-D) `query`, expected `key` and `value` to be 2-D", "(5,1,8)"});
    expect_error([&] { m.forward(rnd({4, 1, 8}), k, v); },
                 {"For batched (3-D) `query`, expected `key` and `value` to be 3-D", "(5,8)"});
    expect_error([&] { m.forward(rnd({4, 1, 1, 8}), k, v); },
                 {"query should be unbatched 2D or batched 3D tensor but received 4-D query tensor", "(4,1,1,8)"});
    expect_error([&] { m.forward(q, k, v, Mask(xt::zeros<bool>({1, 5}))); },
                 {"For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D", "(1,5)"});
    expect_error([&] { m.forward(rnd({4, 1, 8}), rnd({5, 1, 8}), rnd({5, 1, 8}), Mask(xt::zeros<bool>({5}))); },
                 {"For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D", "(5)"});
    expect_error([&] { m.forward(q, k, v, {}, true, Tensor::zeros({3, 4, 5})); },
                 {"Expected `attn_mask` shape to be (2,4,5) but got (3,4,5)"});
    expect_error([&] { m.forward(q, k, v, {}, true, Tensor::zeros({1, 2, 4, 5})); },
                 {"For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D", "(1,2,4,5)"});
    expect_error([&] { m.forward(q, k, v, Mask(xt::zeros<bool>({4}))); }, {"expecting key_padding_mask shape of (5), but got (4)"});

    TransformerDecoderLayer dec(small_layer<TransformerDecoderLayerOptions>());
    expect_error([&] { dec.forward(rnd({4, 8}), rnd({5, 1, 8})); },
                 {"TransformerDecoderLayer", "must be both batched (3-D) or both unbatched (2-D)", "(4,8)", "(5,1,8)"});
    Transformer model(small_transformer());
    expect_error([&] { model.forward(rnd({5, 8}), rnd({4, 1, 8})); },
                 {"Transformer", "src and tgt must be both batched (3-D) or both unbatched (2-D)", "(5,8)", "(4,1,8)"});
    expect_error([&] { model.forward(rnd({5, 8}), rnd({4, 6})); }, {"feature number of src and tgt", "(4,6)"});
    TransformerEncoderLayer layer(small_layer());
    expect_error([&] { layer.forward(rnd({5, 6})); }, {"TransformerEncoderLayer", "unbatched (L, E)", "(5,6)"});
}

TEST_SUITE_END();
