// The options convention of tutorials A, B and C (TEAM.md, nn/options.hpp): every module has a
// <Module>Options with its required sizes as constructor arguments and everything else (the
// errata switches included) as chained setters whose defaults are the tutorial's; a module
// built from its Options is the module its positional constructor builds (same names, same
// initial weights from the same seed).
#include "tests/nn/module_test_util.hpp"
#include "tests/test_util.hpp"

#include "nn/conv_feed_forward.hpp"
#include "nn/tutorial_a/tutorial_a.hpp"
#include "nn/tutorial_b/tutorial_b.hpp"
#include "nn/tutorial_c/tutorial_c.hpp"

TEST_SUITE_BEGIN("nn");

using namespace xtgrad;
namespace ta = nn::tutorial_a;
namespace tb = nn::tutorial_b;
namespace tc = nn::tutorial_c;

namespace {

// Builds both with the same seed; the state names and every initial value agree.
template <class FromOptions, class Positional>
void same_module(FromOptions&& from_options, Positional&& positional) {
    manual_seed(3);
    auto a = from_options();
    manual_seed(3);
    auto b = positional();
    const nn::NamedTensors pa = a.named_parameters(), pb = b.named_parameters();
    REQUIRE(test::names_of(pa) == test::names_of(pb));
    CHECK_FALSE(pa.empty());
    for (std::size_t i = 0; i < pa.size(); ++i) {
        CAPTURE(pa[i].first);
        CHECK(xt::all(xt::equal(pa[i].second.data(), pb[i].second.data())));
    }
}

}  // namespace

TEST_CASE("module options: tutorial A, Options or the notebook's positional arguments build one module") {
    same_module([] { return ta::MultiHeadAttention(ta::MultiHeadAttentionOptions(8, 2).dropout(0.1f).split(ta::HeadSplit::literal)); },
                [] { return ta::MultiHeadAttention(8, 2, 0.1f, {ta::HeadSplit::literal}); });
    same_module([] { return ta::EncoderLayer(ta::EncoderLayerOptions(8, 2).ffn_dim(12).layer_norm(ta::LayerNormKind::custom)); },
                [] { return ta::EncoderLayer(8, 2, 12, 0.f, {.layer_norm = ta::LayerNormKind::custom}); });
    same_module([] { return ta::DecoderLayer(ta::DecoderLayerOptions(8, 2).ffn_dim(12)); }, [] { return ta::DecoderLayer(8, 2, 12); });
    same_module([] { return ta::PositionalWiseFeedForward(ta::PositionalWiseFeedForwardOptions(8, 12).dropout(0.2f)); },
                [] { return ta::PositionalWiseFeedForward(8, 12, 0.2f); });
    same_module([] { return ta::Transformer(ta::TransformerOptions(9, 5, 7, 6).num_layers(1).model_dim(8).num_heads(2).ffn_dim(12)); },
                [] { return ta::Transformer(9, 5, 7, 6, 1, 8, 2, 12); });
    const ta::MultiHeadAttention literal(ta::MultiHeadAttentionOptions(64, 8).scale(ta::ScaleRule::literal));
    CHECK(literal.options.scale == ta::ScaleRule::literal);
    CHECK(literal.scale() == doctest::Approx(1.0));  // (dk // h) ** -0.5 = (8 // 8) ** -0.5
    // The notebook's defaults.
    const ta::TransformerOptions t(9, 5, 7, 6);
    CHECK(t.num_layers() == 6);
    CHECK(t.model_dim() == 512);
    CHECK(t.num_heads() == 8);
    CHECK(t.ffn_dim() == 2048);
    CHECK(t.dropout() == 0.2f);
    CHECK(t.split() == ta::HeadSplit::transpose);
    CHECK(t.scale() == ta::ScaleRule::sqrt_dk);
    CHECK(t.layer_norm() == ta::LayerNormKind::torch);
    CHECK(ta::ScaledDotProductAttentionOptions().attention_dropout() == 0.f);
}

TEST_CASE("module options: tutorial B, Options or the tutorial's positional arguments build one module") {
    same_module([] { return tb::MultiHeadAttention(tb::MultiHeadAttentionOptions(8, 2)); }, [] { return tb::MultiHeadAttention(8, 2); });
    same_module([] { return tb::PositionWiseFeedForward(tb::PositionWiseFeedForwardOptions(8, 12)); },
                [] { return tb::PositionWiseFeedForward(8, 12); });
    same_module([] { return tb::EncoderLayer(tb::EncoderLayerOptions(8, 2, 12).dropout(0.f)); },
                [] { return tb::EncoderLayer(8, 2, 12, 0.f); });
    same_module([] { return tb::DecoderLayer(tb::DecoderLayerOptions(8, 2, 12)); }, [] { return tb::DecoderLayer(8, 2, 12, 0.1f); });
    same_module(
        [] { return tb::Transformer(tb::TransformerOptions(11, 13).d_model(8).num_heads(2).num_layers(1).d_ff(12).max_seq_length(6)); },
        [] { return tb::Transformer(11, 13, 8, 2, 1, 12, 6, 0.1f); });
    // The tutorial's run: Transformer(5000, 5000, 512, 8, 6, 2048, 100, 0.1).
    const tb::TransformerOptions t(5000, 5000);
    CHECK(t.d_model() == 512);
    CHECK(t.num_heads() == 8);
    CHECK(t.num_layers() == 6);
    CHECK(t.d_ff() == 2048);
    CHECK(t.max_seq_length() == 100);
    CHECK(t.dropout() == 0.1f);
    CHECK(tb::PositionalEncoding(tb::PositionalEncodingOptions(8, 6)).pe.shape() == Shape{1, 6, 8});
}

TEST_CASE("module options: tutorial C and the shared feed-forward block") {
    same_module([] { return tc::MultiHeadAttention(tc::MultiHeadAttentionOptions(8, 2, 3, 5)); },
                [] { return tc::MultiHeadAttention(8, 2, 3, 5); });
    same_module([] { return tc::EncoderLayer(tc::EncoderLayerOptions(8, 2, 12, 3, 5)); }, [] { return tc::EncoderLayer(8, 2, 12, 3, 5); });
    same_module([] { return tc::DecoderLayer(tc::DecoderLayerOptions(8, 2, 12, 3, 5)); }, [] { return tc::DecoderLayer(8, 2, 12, 3, 5); });
    same_module([] { return tc::PoswiseFeedForwardNet(tc::PoswiseFeedForwardNetOptions(8, 12)); },
                [] { return nn::ConvFeedForward(nn::ConvFeedForwardOptions(8, 12).conv_names(nn::ConvNames::tutorial_c())); });
    CHECK(tc::ScaledDotProductAttention(tc::ScaledDotProductAttentionOptions(5)).d_k == 5);
    const nn::ConvFeedForwardOptions o(8, 12);
    CHECK(o.dropout() == 0.f);
    CHECK(o.layer_norm() == nn::LayerNormKind::torch);
    CHECK(o.conv_names().first == "w1");
}

TEST_SUITE_END();
