// Tutorial A modules: gradcheck, behaviour, state names and bad-input tests (parity with
// PyTorch runs in tests/parity_test.cpp). Select them with -tc='*utorial A*'.
#include <xtgrad/nn/tutorial_a/tutorial_a.hpp>
#include "tests/test_util.hpp"
#include "tests/nn/module_test_util.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

TEST_SUITE_BEGIN("tutorial_a");

using namespace xtgrad;
namespace ta = xtgrad::nn::tutorial_a;
using test::rnd;
using test::kReluSafe;
using test::meta_names;
using test::names_of;
using test::names_where;
using V = std::vector<Tensor>;

namespace {

// Small sizes: d 8, 2 heads (dk 4), ffn 12.
constexpr std::size_t kD = 8, kHeads = 2, kFf = 12;

// The trainable parameters of m, to hand to gradcheck; `except` leaves some out by name.
V trainable(const nn::Module& m, const std::vector<std::string>& except = {}) {
    V out;
    for (auto& [name, t] : m.named_parameters())
        if (t.requires_grad() && std::find(except.begin(), except.end(), name) == except.end()) out.push_back(t);
    return out;
}

V concat(V a, const V& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// ids (B, L) with trailing PAD: row 0 full length, the others shorter (as the fixtures).
Ids padded_ids(const std::vector<std::vector<std::int64_t>>& rows) {
    const std::size_t L = rows[0].size();
    Ids ids = xt::zeros<std::int64_t>({rows.size(), L});
    for (std::size_t b = 0; b < rows.size(); ++b)
        for (std::size_t t = 0; t < rows[b].size(); ++t) ids(b, t) = rows[b][t];
    return ids;
}

Ids lengths_of(const Ids& ids) {
    Ids len = xt::zeros<std::int64_t>({ids.shape(0)});
    for (std::size_t b = 0; b < ids.shape(0); ++b)
        for (std::size_t t = 0; t < ids.shape(1); ++t) len(b) += ids(b, t) != 0;
    return len;
}

const Ids kSrc = padded_ids({{3, 1, 5, 2, 4}, {2, 6, 0, 0, 0}});  // (2, 5), lengths 5, 2; vocab 6
const Ids kTgt = padded_ids({{1, 4, 2, 3}, {5, 2, 1, 0}});        // (2, 4), lengths 4, 3; vocab 5

}  // namespace

// ---- PositionalEncoding -------------------------------------------------------------------

TEST_CASE("tutorial A: PositionalEncoding table has a zero PAD row and the sinusoid of p-1 in row p") {
    ta::PositionalEncoding pe(6, 5);
    const Array& table = pe.position_encoding->weight.data();
    REQUIRE(table.shape(0) == 6);
    for (std::size_t j = 0; j < 6; ++j) CHECK(table(0, j) == 0.f);                  // PAD
    for (std::size_t j = 0; j < 6; ++j) CHECK(table(1, j) == (j % 2 ? 1.f : 0.f));  // position 0: sin 0, cos 0
    // row 4 = position 3, feature 3 = cos(3 / 10000^(2/6))
    CHECK(table(4, 3) == doctest::Approx(std::cos(3.0 / std::pow(10000.0, 2.0 / 6.0))));
    CHECK_FALSE(pe.position_encoding->weight.requires_grad());  // frozen, as requires_grad=False
    CHECK(names_of(pe.named_parameters()) == std::vector<std::string>{"position_encoding.weight"});
}

TEST_CASE("tutorial A: PositionalEncoding looks up positions 1..len then 0") {
    ta::PositionalEncoding pe(4, 6);
    const Ids lengths = {3, 1, 2};
    const Ids expected = {{1, 2, 3}, {1, 0, 0}, {1, 2, 0}};
    CHECK(pe.positions(lengths) == expected);
    Ids column = lengths;  // the notebook's (B, 1) form gives the same
    column.reshape({3, 1});
    CHECK(pe.positions(column) == expected);
    Tensor out = pe.forward(lengths);
    CHECK(out.shape() == Shape{3, 3, 4});
    for (std::size_t j = 0; j < 4; ++j) {
        CHECK(out.data()(1, 2, j) == 0.f);                                      // padding: the zero row
        CHECK(out.data()(2, 1, j) == pe.position_encoding->weight.data()(2, j));  // second token: row 2
    }
}

TEST_CASE("tutorial A: PositionalEncoding rejects lengths the table cannot serve") {
    ta::PositionalEncoding pe(4, 6);
    test::expect_error([&] { pe.forward(Ids{3, 7}); }, {"PositionalEncoding", "input_len[1] = 7", "max_seq_len 6"});
    test::expect_error([&] { pe.forward(Ids{-1}); }, {"PositionalEncoding", "input_len[0] = -1"});
    test::expect_error([&] { pe.forward(Ids{{1, 2}, {3, 4}}); }, {"PositionalEncoding", "input_len", "(2,2)"});
    test::expect_error([] { ta::PositionalEncoding(0, 3); }, {"PositionalEncoding", "d_model (0)"});
}

// ---- ScaledDotProductAttention ------------------------------------------------------------

TEST_CASE("tutorial A: ScaledDotProductAttention gradcheck, masking and the scale argument") {
    ta::ScaledDotProductAttention sdpa;
    Tensor q = rnd({3, 2, 4}, 1), k = rnd({3, 5, 4}, 2), v = rnd({3, 5, 3}, 3);
    Mask mask = xt::zeros<bool>({3, 2, 5});
    mask(0, 0, 4) = mask(1, 1, 0) = mask(2, 0, 2) = true;
    nn::AttentionResult a = sdpa.forward(q, k, v, 0.5f, &mask);
    CHECK(a.context.shape() == Shape{3, 2, 3});
    CHECK(a.weights.shape() == Shape{3, 2, 5});
    CHECK(a.weights.data()(0, 0, 4) == 0.f);  // -inf before softmax
    CHECK(a.weights.data()(1, 1, 0) == 0.f);
    CHECK(gradcheck([&](const V& x) { return sdpa.forward(x[0], x[1], x[2], 0.5f, &mask).context; }, {q, k, v}));
    CHECK(gradcheck([&](const V& x) { return sdpa.forward(x[0], x[1], x[2]).context; }, {q, k, v}));
    // `if scale:` — 0 (the notebook's None) means no scaling, the same as 1
    CHECK(test::max_abs_diff(sdpa.forward(q, k, v, 0.f).weights.data(), sdpa.forward(q, k, v, 1.f).weights.data()) == 0.f);
}

TEST_CASE("tutorial A: ScaledDotProductAttention bad input") {
    ta::ScaledDotProductAttention sdpa;
    Tensor q = rnd({3, 2, 4}), k = rnd({3, 5, 4}), v = rnd({3, 5, 3});
    const Mask swapped = xt::zeros<bool>({3, 5, 2});
    test::expect_error([&] { sdpa.forward(q, k, v, 1.f, &swapped); },
                      {"ScaledDotProductAttention", "attn_mask (3,5,2)", "(3,2,5)"});
    test::expect_error([&] { sdpa.forward(rnd({2, 3, 2, 4}), k, v); }, {"ScaledDotProductAttention", "3-D", "(2,3,2,4)"});
    test::expect_error([&] { sdpa.forward(q, rnd({3, 5, 6}), v); }, {"ScaledDotProductAttention", "(3,2,4)", "(3,5,6)"});
    // A query with every key masked: PyTorch gives NaN; xtgrad refuses the row.
    Mask all = xt::ones<bool>({3, 2, 5});
    test::expect_error([&] { sdpa.forward(q, k, v, 1.f, &all); }, {"softmax", "entirely -inf"});
}

// ---- MultiHeadAttention -------------------------------------------------------------------

namespace {
struct MhaCase {
    Tensor key = rnd({2, 5, kD}, 11), value = rnd({2, 5, kD}, 12), query = rnd({2, 3, kD}, 13);
    Mask mask = ta::padding_mask(kSrc, padded_ids({{1, 1, 1}, {1, 1, 1}}));  // (2, 3, 5): PAD keys of row 1
};
}  // namespace

TEST_CASE("tutorial A: MultiHeadAttention gradcheck in every variant") {
    MhaCase c;
    const std::vector<ta::Errata> variants = {
        {},
        {ta::HeadSplit::view_only, ta::ScaleRule::sqrt_dk, ta::LayerNormKind::torch},
        {ta::HeadSplit::transpose, ta::ScaleRule::dk_over_heads, ta::LayerNormKind::torch},
        {ta::HeadSplit::transpose, ta::ScaleRule::sqrt_dk, ta::LayerNormKind::custom},
    };
    for (const ta::Errata& o : variants) {
        manual_seed(1);
        ta::MultiHeadAttention mha(kD, kHeads, 0.f, o);
        nn::AttentionResult a = mha.forward(c.key, c.value, c.query, &c.mask);
        CHECK(a.context.shape() == Shape{2, 3, kD});
        CHECK(a.weights.shape() == Shape{2 * kHeads, 3, 5});
        CHECK(gradcheck([&](const V& x) { return mha.forward(x[0], x[1], x[2], &c.mask).context; },
                        concat({c.key, c.value, c.query}, trainable(mha))));
    }
}

TEST_CASE("tutorial A: MultiHeadAttention heads are feature slices; row b*h + head; PAD keys get 0") {
    MhaCase c;
    manual_seed(2);
    ta::MultiHeadAttention mha(kD, kHeads);
    CHECK(mha.scale() == doctest::Approx(0.5f));  // dk 4: 4 ** -0.5
    nn::AttentionResult a = mha.forward(c.key, c.value, c.query, &c.mask);
    const std::size_t dk = kD / kHeads;
    Tensor q = mha.linear_q->forward(c.query), k = mha.linear_k->forward(c.key);
    Tensor per_head = reshape(a.weights, {2, static_cast<long>(kHeads), 3, 5});
    for (std::size_t head = 0; head < kHeads; ++head) {
        const long lo = static_cast<long>(head * dk), hi = static_cast<long>((head + 1) * dk);
        Tensor scores = matmul(slice(q, 2, lo, hi), transpose(slice(k, 2, lo, hi), 1, 2)) * 0.5f;
        Tensor expected = softmax(masked_fill(scores, c.mask, -INFINITY), -1);  // (B, Lq, Lk)
        Tensor got = reshape(slice(per_head, 1, static_cast<long>(head), static_cast<long>(head) + 1), {2, 3, 5});
        CHECK(test::max_abs_diff(got.data(), expected.data()) < 1e-6f);
    }
    for (std::size_t head = 0; head < kHeads; ++head)  // batch item 1's keys 2..4 are PAD
        for (std::size_t j = 2; j < 5; ++j) CHECK(a.weights.data()(1 * kHeads + head, 0, j) == 0.f);
}

TEST_CASE("tutorial A: MultiHeadAttention literal variants change the numbers") {
    MhaCase c;
    auto run = [&](const ta::Errata& o) {
        manual_seed(3);
        return ta::MultiHeadAttention(kD, kHeads, 0.f, o).forward(c.key, c.value, c.query, &c.mask).context;
    };
    const Tensor intent = run({});
    ta::Errata literal_split;
    literal_split.split = ta::HeadSplit::view_only;
    CHECK(test::max_abs_diff(run(literal_split).data(), intent.data()) > 1e-3f);
    // literal scale: (dk // h) ** -0.5 = (4 // 2) ** -0.5
    ta::Errata literal_scale;
    literal_scale.scale = ta::ScaleRule::dk_over_heads;
    CHECK(ta::MultiHeadAttention(kD, kHeads, 0.f, literal_scale).scale() == doctest::Approx(std::pow(2.0, -0.5)));
    CHECK(test::max_abs_diff(run(literal_scale).data(), intent.data()) > 1e-3f);
}

TEST_CASE("tutorial A: MultiHeadAttention state names and bad input") {
    ta::MultiHeadAttention mha(kD, kHeads);
    CHECK(names_of(mha.named_parameters()) ==
          std::vector<std::string>{"linear_k.weight", "linear_k.bias", "linear_v.weight", "linear_v.bias",
                                   "linear_q.weight", "linear_q.bias", "linear_final.weight", "linear_final.bias",
                                   "layer_norm.weight", "layer_norm.bias"});
    ta::Errata custom;
    custom.layer_norm = ta::LayerNormKind::custom;
    const auto custom_names = names_of(ta::MultiHeadAttention(kD, kHeads, 0.f, custom).named_parameters());
    CHECK(custom_names.back() == "layer_norm.beta");
    CHECK(custom_names[8] == "layer_norm.gamma");

    test::expect_error([] { ta::MultiHeadAttention(10, 3); }, {"MultiHeadAttention", "model_dim 10", "num_heads 3"});
    test::expect_error([] { ta::MultiHeadAttention(10, 0); }, {"MultiHeadAttention", "num_heads 0"});
    ta::Errata literal_scale;
    literal_scale.scale = ta::ScaleRule::dk_over_heads;
    test::expect_error([&] { ta::MultiHeadAttention(8, 4, 0.f, literal_scale); },
                      {"MultiHeadAttention", "divides by zero", "dim_per_head 2 < num_heads 4"});

    MhaCase c;
    ta::EncoderLayer layer(kD, kHeads, kFf);  // a path: errors name "attention"
    const Mask swapped = xt::zeros<bool>({2, 5, 3});
    test::expect_error([&] { layer.attention->forward(c.key, c.value, c.query, &swapped); },
                      {"MultiHeadAttention 'attention'", "attn_mask (2,5,3)", "(2,3,5)"});
    const Mask flat = xt::zeros<bool>({3, 5});
    test::expect_error([&] { mha.forward(c.key, c.value, c.query, &flat); }, {"MultiHeadAttention", "(3,5)", "(2,3,5)"});
    test::expect_error([&] { mha.forward(c.key, c.value, rnd({2, 3, 6})); },
                      {"MultiHeadAttention", "query", "(batch, len, 8)", "(2,3,6)"});
    test::expect_error([&] { mha.forward(c.key, rnd({2, 4, kD}), c.query); }, {"MultiHeadAttention", "(2,5,8)", "(2,4,8)"});
    test::expect_error([&] { mha.forward(c.key, c.value, rnd({3, 3, kD})); }, {"MultiHeadAttention", "(3,3,8)", "batch"});
}

// ---- PositionalWiseFeedForward ------------------------------------------------------------

TEST_CASE("tutorial A: PositionalWiseFeedForward gradcheck, both LayerNorms, A's names") {
    Tensor x = rnd({2, 3, kD}, 21);
    for (ta::LayerNormKind ln : {ta::LayerNormKind::torch, ta::LayerNormKind::custom}) {
        manual_seed(4);
        ta::PositionalWiseFeedForward ffn(kD, kFf, 0.f, ln);
        CHECK(ffn.forward(x).shape() == Shape{2, 3, kD});
        CHECK(gradcheck([&](const V& v) { return ffn.forward(v[0]); }, concat({x}, trainable(ffn)), kReluSafe));
    }
    ta::PositionalWiseFeedForward a(kD, kFf);
    CHECK(names_of(a.named_parameters()) == std::vector<std::string>{"w1.weight", "w1.bias", "w2.weight", "w2.bias",
                                                                     "layer_norm.weight", "layer_norm.bias"});
    ta::PositionalWiseFeedForward custom(ta::PositionalWiseFeedForwardOptions(kD, kFf).layer_norm(ta::LayerNormKind::custom));
    CHECK(names_of(custom.named_parameters()).back() == "layer_norm.beta");
    CHECK(a.w2->weight.shape() == Shape{kD, kFf, 1});  // ffn_dim -> model_dim (the notebook: model_dim -> ffn_dim)
}

TEST_CASE("tutorial A: PositionalWiseFeedForward bad input") {
    ta::PositionalWiseFeedForward ffn(kD, kFf);
    test::expect_error([&] { ffn.forward(rnd({2, 3, 5})); }, {"PositionalWiseFeedForward", "(batch, len, 8)", "(2,3,5)"});
    test::expect_error([&] { ffn.forward(rnd({3, kD})); }, {"PositionalWiseFeedForward", "(3,8)"});
    test::expect_error([] { nn::ConvFeedForward(nn::ConvFeedForwardOptions(kD, kFf).conv_names({"w", "w"})); },
                      {"ConvFeedForward", "distinct names"});
    test::expect_error([] { ta::PositionalWiseFeedForward(0, kFf); }, {"PositionalWiseFeedForward", "d_model (0)"});
}

// ---- EncoderLayer, DecoderLayer -----------------------------------------------------------

TEST_CASE("tutorial A: EncoderLayer gradcheck with the padding mask it is given") {
    manual_seed(5);
    ta::EncoderLayer layer(kD, kHeads, kFf);
    Tensor x = rnd({2, 5, kD}, 31);
    const Mask mask = ta::padding_mask(kSrc, kSrc);
    ta::EncoderLayerOutput y = layer.forward(x, &mask);
    CHECK(y.output.shape() == Shape{2, 5, kD});
    CHECK(y.attention.shape() == Shape{2 * kHeads, 5, 5});
    CHECK(y.attention.data()(kHeads, 0, 3) == 0.f);  // batch 1, key 3 is PAD
    CHECK(gradcheck([&](const V& v) { return layer.forward(v[0], &mask).output; }, concat({x}, trainable(layer)), kReluSafe));
}

TEST_CASE("tutorial A: DecoderLayer has two attention modules and passes gradcheck") {
    manual_seed(6);
    ta::DecoderLayer layer(kD, kHeads, kFf);
    // two modules, two sets of weights (the notebook reuses one)
    CHECK(layer.self_attention.get() != layer.context_attention.get());
    CHECK(test::max_abs_diff(layer.self_attention->linear_q->weight.data(),
                             layer.context_attention->linear_q->weight.data()) > 0.f);
    CHECK(trainable(layer).size() == 10 + 10 + 6);
    Tensor dec = rnd({2, 4, kD}, 41), enc = rnd({2, 5, kD}, 42);
    const Mask self_mask = ta::decoder_self_mask(kTgt), context_mask = ta::padding_mask(kSrc, kTgt);
    ta::DecoderLayerOutput y = layer.forward(dec, enc, &self_mask, &context_mask);
    CHECK(y.output.shape() == Shape{2, 4, kD});
    CHECK(y.self_attention.shape() == Shape{2 * kHeads, 4, 4});
    CHECK(y.context_attention.shape() == Shape{2 * kHeads, 4, 5});
    CHECK(y.self_attention.data()(0, 1, 2) == 0.f);  // the future is masked
    CHECK(gradcheck([&](const V& v) { return layer.forward(v[0], v[1], &self_mask, &context_mask).output; },
                    concat({dec, enc}, trainable(layer)), kReluSafe));
}

// ---- Encoder, Decoder ---------------------------------------------------------------------

TEST_CASE("tutorial A: Encoder gradcheck; the PAD embedding row gets exactly zero gradient") {
    manual_seed(0);  // a seed whose ReLU inputs stay clear of the kink (see kReluSafe)
    ta::Encoder encoder(6, 7, 2, kD, kHeads, kFf);
    const Ids len = lengths_of(kSrc);
    ta::EncoderOutput y = encoder.forward(kSrc, len);
    CHECK(y.output.shape() == Shape{2, 5, kD});
    REQUIRE(y.attentions.size() == 2);
    // every parameter but the embedding table, whose PAD row is read but never trained
    CHECK(gradcheck([&](const V&) { return encoder.forward(kSrc, len).output; },
                    trainable(encoder, {"seq_embedding.weight"}), kReluSafe));
    Tensor table = encoder.seq_embedding->weight;
    table.zero_grad();
    encoder.forward(kSrc, len).output.backward(Array(xt::ones<float>(Shape{2, 5, kD})));
    for (std::size_t j = 0; j < kD; ++j) CHECK(table.grad_array()(0, j) == 0.f);
    // without PAD in the batch, the table itself passes gradcheck
    const Ids full = padded_ids({{3, 1, 5}, {2, 6, 4}});
    CHECK(gradcheck([&](const V&) { return encoder.forward(full, lengths_of(full)).output; }, {table}, kReluSafe));
}

TEST_CASE("tutorial A: Encoder outputs at real tokens ignore whatever the PAD row holds") {
    manual_seed(8);
    ta::Encoder encoder(6, 7, 2, kD, kHeads, kFf);
    const Ids len = lengths_of(kSrc);
    const Array before = encoder.forward(kSrc, len).output.data();
    for (std::size_t j = 0; j < kD; ++j) encoder.seq_embedding->weight.mutable_data()(0, j) = 3.f + j;  // a loaded PAD row
    const Array after = encoder.forward(kSrc, len).output.data();
    for (std::size_t t = 0; t < 2; ++t)  // batch 1 has 2 real tokens
        for (std::size_t j = 0; j < kD; ++j) CHECK(after(1, t, j) == doctest::Approx(before(1, t, j)).epsilon(1e-5));
}

TEST_CASE("tutorial A: Encoder bad input") {
    ta::Encoder encoder(6, 5, 1, kD, kHeads, kFf);
    const Ids len = lengths_of(kSrc);
    test::expect_error([&] { encoder.forward(padded_ids({{3, 7, 1}}), Ids{3}); },
                      {"Encoder", "id 7 at (0,1)", "7 rows"});
    test::expect_error([&] { encoder.forward(kSrc, Ids{4, 2}); }, {"Encoder", "longest of inputs_len is 4", "(2,5)"});
    test::expect_error([&] { encoder.forward(kSrc, Ids{5}); }, {"Encoder", "inputs_len", "(1)"});
    test::expect_error([&] { encoder.forward(Ids{1, 2, 3}, Ids{3}); }, {"Encoder", "(batch, len)", "(3)"});
    ta::Encoder short_table(6, 4, 1, kD, kHeads, kFf);
    test::expect_error([&] { short_table.forward(kSrc, len); },
                      {"PositionalEncoding 'pos_embedding'", "input_len[0] = 5", "max_seq_len 4"});
}

TEST_CASE("tutorial A: Decoder gradcheck; a position never sees later tokens") {
    manual_seed(1);  // a seed whose ReLU inputs stay clear of the kink (see kReluSafe)
    ta::Decoder decoder(5, 6, 2, kD, kHeads, kFf);
    Tensor enc = rnd({2, 5, kD}, 51);
    const Ids len = lengths_of(kTgt);
    const Mask context_mask = ta::padding_mask(kSrc, kTgt);
    ta::DecoderOutput y = decoder.forward(kTgt, len, enc, &context_mask);
    CHECK(y.output.shape() == Shape{2, 4, kD});
    REQUIRE(y.self_attentions.size() == 2);
    REQUIRE(y.context_attentions.size() == 2);
    CHECK(gradcheck([&](const V& v) { return decoder.forward(kTgt, len, v[0], &context_mask).output; },
                    concat({enc}, trainable(decoder, {"seq_embedding.weight"})), test::model_gradcheck(kReluSafe)));
    // change the last token of row 0: positions 0..2 must not move
    Ids changed = kTgt;
    changed(0, 3) = 5;
    const Array a = y.output.data(), b = decoder.forward(changed, len, enc, &context_mask).output.data();
    for (std::size_t t = 0; t < 3; ++t)
        for (std::size_t j = 0; j < kD; ++j) CHECK(a(0, t, j) == doctest::Approx(b(0, t, j)).epsilon(1e-5));
    CHECK(std::abs(a(0, 3, 0) - b(0, 3, 0)) > 1e-4f);
}

TEST_CASE("tutorial A: Decoder rejects the notebook's swapped context mask") {
    ta::Decoder decoder(5, 6, 1, kD, kHeads, kFf);
    Tensor enc = rnd({2, 5, kD});
    const Mask notebook = ta::padding_mask(kTgt, kSrc);  // (B, Ls, Lt): keys = target
    test::expect_error([&] { decoder.forward(kTgt, lengths_of(kTgt), enc, &notebook); },
                      {"MultiHeadAttention 'decoder_layers.0.context_attention'", "attn_mask (2,5,4)", "(2,4,5)"});
}

// ---- Transformer --------------------------------------------------------------------------

TEST_CASE("tutorial A: Transformer returns logits; probabilities are the inference softmax") {
    manual_seed(10);
    ta::Transformer model(6, 7, 5, 6, 1, kD, kHeads, kFf, 0.f);
    model.eval();
    const Ids src_len = lengths_of(kSrc), tgt_len = lengths_of(kTgt);
    ta::TransformerOutput y = model.forward(kSrc, src_len, kTgt, tgt_len);
    CHECK(y.logits.shape() == Shape{2, 4, 5});
    REQUIRE(y.ctx_attn.size() == 1);
    CHECK(y.ctx_attn[0].shape() == Shape{2 * kHeads, 4, 5});
    for (std::size_t head = 0; head < kHeads; ++head)  // source PADs of batch 1 (keys 2..4) are hidden
        for (std::size_t i = 0; i < 4; ++i) CHECK(y.ctx_attn[0].data()(kHeads + head, i, 4) == 0.f);
    Tensor probs = model.predict(kSrc, src_len, kTgt, tgt_len);
    CHECK(probs.grad_fn() == nullptr);
    CHECK(test::max_abs_diff(probs.data(), softmax(y.logits, 2).data()) < 1e-6f);
    const Tensor totals = sum(probs, {2});
    for (float s : totals.data()) CHECK(s == doctest::Approx(1.f));
    CHECK(gradcheck([&](const V&) { return model.forward(kSrc, src_len, kTgt, tgt_len).logits; },
                    trainable(model, {"encoder.seq_embedding.weight", "decoder.seq_embedding.weight"}),
                    test::model_gradcheck(kReluSafe)));
    test::expect_error([&] { model.forward(kSrc, src_len, padded_ids({{1, 2}}), Ids{2}); },
                      {"Transformer", "(2,5)", "(1,2)", "one batch size"});
}

TEST_CASE("tutorial A: Transformer named_parameters are the notebook's state_dict names") {
    ta::Transformer model(6, 7, 5, 6, 1, kD, kHeads, kFf);
    std::vector<std::string> expected;
    const std::vector<std::string> mha = {"linear_k.weight", "linear_k.bias", "linear_v.weight", "linear_v.bias",
                                          "linear_q.weight", "linear_q.bias", "linear_final.weight", "linear_final.bias",
                                          "layer_norm.weight", "layer_norm.bias"};
    const std::vector<std::string> ffn = {"w1.weight", "w1.bias", "w2.weight", "w2.bias", "layer_norm.weight",
                                          "layer_norm.bias"};
    auto add = [&](const std::string& prefix, const std::vector<std::string>& names) {
        for (const std::string& n : names) expected.push_back(prefix + n);
    };
    add("encoder.encoder_layers.0.attention.", mha);
    add("encoder.encoder_layers.0.feed_forward.", ffn);
    expected.push_back("encoder.seq_embedding.weight");
    expected.push_back("encoder.pos_embedding.position_encoding.weight");  // frozen, still a parameter (as torch)
    add("decoder.decoder_layers.0.self_attention.", mha);
    add("decoder.decoder_layers.0.context_attention.", mha);
    add("decoder.decoder_layers.0.feed_forward.", ffn);
    expected.push_back("decoder.seq_embedding.weight");
    expected.push_back("decoder.pos_embedding.position_encoding.weight");
    expected.push_back("linear.weight");
    CHECK(names_of(model.named_parameters()) == expected);
    CHECK(model.encoder->seq_embedding->weight.shape() == Shape{7, kD});  // vocab + 1 rows (PAD)
    CHECK(model.linear->weight.shape() == Shape{5, kD});                 // tgt_vocab_size outputs, no bias
    CHECK_FALSE(model.linear->bias.defined());
}

TEST_CASE("tutorial A: state names and order match the committed PyTorch fixtures") {
    // meta.json lists torch's trainable parameters in state_dict order, and the frozen tables
    // as buffers; xtgrad's trainable named_parameters must be the same list.
    ta::Transformer model(13, 10, 11, 9, 2, 20, 4, 36);
    CHECK(names_where(model, true) == meta_names("transformer_a", "params"));
    CHECK(names_of(model.named_buffers()).empty());
    std::vector<std::string> frozen;
    for (auto& [name, t] : model.named_parameters())
        if (!t.requires_grad()) frozen.push_back(name);
    CHECK(frozen == meta_names("transformer_a", "buffers"));
    ta::Errata custom;
    custom.layer_norm = ta::LayerNormKind::custom;
    CHECK(names_where(ta::MultiHeadAttention(20, 4, 0.f, custom), true) == meta_names("mha_a__ln_custom", "params"));
    CHECK(names_where(ta::DecoderLayer(20, 4, 36), true) == meta_names("decoder_layer_a", "params"));
}

// ---- masks --------------------------------------------------------------------------------

TEST_CASE("tutorial A: padding_mask, sequence_mask and the decoder self mask") {
    const Ids k = padded_ids({{4, 2, 0}, {1, 0, 0}}), q = padded_ids({{1, 2}, {3, 0}});
    const Mask pad = ta::padding_mask(k, q);  // (B, Lq, Lk): true where the key is PAD
    CHECK(pad == Mask{{{false, false, true}, {false, false, true}}, {{false, true, true}, {false, true, true}}});
    const Mask future = ta::sequence_mask(q);
    CHECK(future == Mask{{{false, true}, {false, false}}, {{false, true}, {false, false}}});
    const Mask self = ta::decoder_self_mask(q);
    CHECK(self == Mask{{{false, true}, {false, false}}, {{false, true}, {false, true}}});
    test::expect_error([&] { ta::padding_mask(k, padded_ids({{1}})); }, {"padding_mask", "(2,3)", "(1,1)", "batch"});
    test::expect_error([&] { ta::sequence_mask(Ids{1, 2}); }, {"sequence_mask", "(2)"});
    test::expect_error([&] { ta::padding_mask(Ids{1, 0}, q); }, {"padding_mask", "seq_k", "(2)"});
}

TEST_SUITE_END();
