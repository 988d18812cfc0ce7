// Zero-sized inputs through every module of tutorials A, B and C, one by one: a batch of 0
// and a sequence of length 0 give the empty result PyTorch gives, or (where PyTorch refuses:
// a kernel-1 Conv1d on a length-0 sequence) an xtgrad::Error naming the module and the
// shape; never a crash, a SIGFPE or garbage. (The whole Transformers of B, C and D:
// empty_inputs_test.cpp.)
#include "tests/test_util.hpp"

#include <xtgrad/nn/tutorial_a/tutorial_a.hpp>
#include <xtgrad/nn/tutorial_b/tutorial_b.hpp>
#include <xtgrad/nn/tutorial_c/tutorial_c.hpp>

TEST_SUITE_BEGIN("nn");

using namespace xtgrad;
namespace ta = nn::tutorial_a;
namespace tb = nn::tutorial_b;
namespace tc = nn::tutorial_c;

namespace {

constexpr std::size_t kModelDim = 8, kNumHeads = 2, kFeedForward = 12;

Tensor zeros(const Shape& s) { return Tensor::zeros(s, /*requires_grad=*/true); }
Ids ids(const std::vector<std::size_t>& s) { return Ids(xt::ones<std::int64_t>(s)); }
Mask no_mask(const std::vector<std::size_t>& s) { return Mask(xt::zeros<bool>(s)); }
Mask keep_all(const std::vector<std::size_t>& s) { return Mask(xt::ones<bool>(s)); }

// y has `expected` shape, and a backward through it runs (gradients of the empty shapes).
void empty_result(const Tensor& y, const Shape& expected, const Tensor& input) {
    CHECK(y.shape() == expected);
    CHECK(y.numel() == 0);
    sum(y).backward();
    const Array& grad = input.grad_array();
    CHECK(Shape(grad.shape().begin(), grad.shape().end()) == input.shape());
}

tc::Config small_c() { return tc::Config().d_model(kModelDim).d_ff(kFeedForward).d_k(3).d_v(5).n_layers(1).n_heads(kNumHeads); }

}  // namespace

TEST_CASE("empty inputs, tutorial A: attention passes batch 0 and length 0, a query of 0 keys gets zeros") {
    ta::ScaledDotProductAttention sdpa;
    Tensor q = zeros({0, 3, 4});
    empty_result(sdpa.forward(q, zeros({0, 3, 4}), zeros({0, 3, 4}), 0.5f).context, {0, 3, 4}, q);
    Tensor q0 = zeros({2, 0, 4});
    empty_result(sdpa.forward(q0, zeros({2, 0, 4}), zeros({2, 0, 4}), 0.5f).context, {2, 0, 4}, q0);
    // 3 queries over 0 keys: softmax of an empty row is empty, the context a sum of nothing (torch: zeros)
    nn::AttentionResult r = sdpa.forward(zeros({2, 3, 4}), zeros({2, 0, 4}), zeros({2, 0, 5}), 0.5f);
    CHECK(r.weights.shape() == Shape{2, 3, 0});
    CHECK(r.context.shape() == Shape{2, 3, 5});
    CHECK(xt::all(xt::equal(r.context.data(), 0.f)));

    ta::MultiHeadAttention mha(kModelDim, kNumHeads);
    Tensor x = zeros({0, 3, kModelDim});
    empty_result(mha.forward(x, x, x).context, {0, 3, kModelDim}, x);
    Tensor x0 = zeros({2, 0, kModelDim});
    const Mask m = no_mask({2, 0, 0});
    empty_result(mha.forward(x0, x0, x0, &m).context, {2, 0, kModelDim}, x0);
}

TEST_CASE("empty inputs, tutorial A: the Conv1d FFN passes batch 0 and names itself for length 0, as torch refuses") {
    ta::PositionalWiseFeedForward ffn(kModelDim, kFeedForward);
    Tensor x = zeros({0, 3, kModelDim});
    empty_result(ffn.forward(x), {0, 3, kModelDim}, x);
    test::expect_error([&] { ffn.forward(zeros({2, 0, kModelDim})); }, {"PositionalWiseFeedForward", "(2,0,8)", "length 0"});

    ta::EncoderLayer layer(kModelDim, kNumHeads, kFeedForward);
    Tensor e = zeros({0, 3, kModelDim});
    empty_result(layer.forward(e).output, {0, 3, kModelDim}, e);
    ta::DecoderLayer dec(kModelDim, kNumHeads, kFeedForward);
    Tensor d = zeros({0, 2, kModelDim});
    empty_result(dec.forward(d, zeros({0, 3, kModelDim})).output, {0, 2, kModelDim}, d);
    test::expect_error([&] { dec.forward(zeros({2, 0, kModelDim}), zeros({2, 3, kModelDim})); },
                       {"PositionalWiseFeedForward", "'feed_forward'", "(2,0,8)"});
}

TEST_CASE("empty inputs, tutorial A: Encoder, Decoder, Transformer and the masks") {
    CHECK(ta::padding_mask(ids({0, 4}), ids({0, 3})).shape() == std::vector<std::size_t>{0, 3, 4});
    CHECK(ta::sequence_mask(ids({2, 0})).shape() == std::vector<std::size_t>{2, 0, 0});
    ta::PositionalEncoding pe(kModelDim, 6);
    CHECK(pe.forward(Ids::from_shape({0})).shape() == Shape{0, 0, kModelDim});

    ta::Transformer model(10, 6, 10, 6, 1, kModelDim, kNumHeads, kFeedForward, 0.f);
    // The notebook's positions take max(input_len), which torch refuses for an empty batch;
    // xtgrad names the encoder and the shapes.
    test::expect_error([&] { model.forward(ids({0, 4}), Ids::from_shape({0}), ids({0, 3}), Ids::from_shape({0})); },
                       {"Encoder 'encoder'", "inputs (0,4)"});
    ta::Decoder decoder(10, 6, 1, kModelDim, kNumHeads, kFeedForward);
    test::expect_error([&] { decoder.forward(ids({2, 0}), Ids(xt::zeros<std::int64_t>({2})), zeros({2, 3, kModelDim})); },
                       {"PositionalWiseFeedForward 'decoder_layers.0.feed_forward'", "(2,0,8)"});
    const Ids zero_len = Ids(xt::zeros<std::int64_t>({2}));
    test::expect_error([&] { model.forward(Ids::from_shape({2, 0}), zero_len, ids({2, 3}), Ids{3, 3}); },
                       {"PositionalWiseFeedForward", "'encoder.encoder_layers.0.feed_forward'", "(2,0,8)"});
}

TEST_CASE("empty inputs, tutorial B: every module passes batch 0 and length 0 (Linear layers, as torch)") {
    tb::MultiHeadAttention mha(kModelDim, kNumHeads);
    for (const Shape& s : {Shape{0, 3, kModelDim}, Shape{2, 0, kModelDim}}) {
        CAPTURE(shape_str(s));
        Tensor x = zeros(s);
        empty_result(mha.forward(x, x, x, keep_all({s[0], 1, s[1], s[1]})), s, x);
        Tensor f = zeros(s);
        empty_result(tb::PositionWiseFeedForward(kModelDim, kFeedForward).forward(f), s, f);
        Tensor p = zeros(s);
        empty_result(tb::PositionalEncoding(kModelDim, 6).forward(p), s, p);
        Tensor e = zeros(s);
        empty_result(tb::EncoderLayer(kModelDim, kNumHeads, kFeedForward, 0.f).forward(e, keep_all({s[0], 1, 1, s[1]})), s, e);
        Tensor d = zeros(s);
        empty_result(tb::DecoderLayer(kModelDim, kNumHeads, kFeedForward, 0.f).forward(d, zeros(s), keep_all({s[0], 1, 1, s[1]}),
                                                                 keep_all({s[0], 1, s[1], s[1]})),
                     s, d);
    }
    tb::Transformer model(10, 10, kModelDim, kNumHeads, 1, kFeedForward, 6, 0.f);
    CHECK(model.forward(ids({0, 4}), ids({0, 3})).shape() == Shape{0, 3, 10});
    CHECK(model.forward(ids({2, 0}), ids({2, 3})).shape() == Shape{2, 3, 10});
    CHECK(model.forward(ids({2, 4}), ids({2, 0})).shape() == Shape{2, 0, 10});
}

TEST_CASE("empty inputs, tutorial C: every module passes batch 0; length 0 is named by the FFN, as torch refuses") {
    tc::ScaledDotProductAttention sdpa(3);
    Tensor q = zeros({0, kNumHeads, 3, 3});
    empty_result(sdpa.forward(q, zeros({0, kNumHeads, 3, 3}), zeros({0, kNumHeads, 3, 5}), no_mask({0, kNumHeads, 3, 3})).context,
                 {0, kNumHeads, 3, 5}, q);
    tc::MultiHeadAttention mha(kModelDim, kNumHeads, 3, 5);
    Tensor x = zeros({0, 3, kModelDim});
    empty_result(mha.forward(x, x, x, no_mask({0, 3, 3})).output, {0, 3, kModelDim}, x);
    Tensor x0 = zeros({2, 0, kModelDim});
    empty_result(mha.forward(x0, x0, x0, no_mask({2, 0, 0})).output, {2, 0, kModelDim}, x0);
    tc::PoswiseFeedForwardNet ffn(kModelDim, kFeedForward);
    Tensor f = zeros({0, 3, kModelDim});
    empty_result(ffn.forward(f), {0, 3, kModelDim}, f);
    test::expect_error([&] { ffn.forward(zeros({2, 0, kModelDim})); }, {"tutorial_c::PoswiseFeedForwardNet", "(2,0,8)"});

    CHECK(tc::get_attn_pad_mask(ids({0, 4}), ids({0, 3})).shape() == std::vector<std::size_t>{0, 4, 3});
    CHECK(tc::get_dec_self_attn_mask(ids({2, 0})).shape() == std::vector<std::size_t>{2, 0, 0});
    CHECK(tc::positions(ids({0, 5})).shape() == std::vector<std::size_t>{0, 5});
    CHECK(tc::positions(ids({2, 0}), tc::PositionScheme::literal, tc::Side::decoder).shape() ==
          std::vector<std::size_t>{2, 0});

    tc::Transformer model(small_c());
    tc::TransformerOutput out = model.forward(ids({0, 4}), ids({0, 3}));
    CHECK(out.logits.shape() == Shape{0, small_c().tgt_vocab_size()});
    CHECK(out.dec_enc_attns.at(0).shape() == Shape{0, kNumHeads, 3, 4});
    CHECK(model.greedy_decode(ids({0, 4}), 7, 8).shape(0) == 0);
    test::expect_error([&] { model.forward(ids({1, 0}), ids({1, 3})); },
                       {"tutorial_c::PoswiseFeedForwardNet", "'encoder.layers.0.pos_ffn'", "(1,0,8)"});
    test::expect_error([&] { model.forward(ids({1, 3}), ids({1, 0})); },
                       {"tutorial_c::PoswiseFeedForwardNet", "'decoder.layers.0.pos_ffn'", "(1,0,8)"});
}

TEST_SUITE_END();
