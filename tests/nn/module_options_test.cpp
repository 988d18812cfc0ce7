// The options convention of tutorials A, B and C (nn/options.hpp; docs/architecture.md, "Module options"): every module has a
// <Module>Options with its required sizes as constructor arguments and everything else (the
// errata switches included) as chained setters whose defaults are the tutorial's; a module
// built from its Options is the module its positional constructor builds (same names, same
// initial weights from the same seed).
#include "tests/nn/module_test_util.hpp"
#include "tests/test_util.hpp"

#include <xtgrad/nn/conv_feed_forward.hpp>
#include <xtgrad/nn/tutorial_a/tutorial_a.hpp>
#include <xtgrad/nn/tutorial_b/tutorial_b.hpp>
#include <xtgrad/nn/tutorial_c/tutorial_c.hpp>
#include <xtgrad/nn/tutorial_d/tutorial_d.hpp>

#include <type_traits>

TEST_SUITE_BEGIN("nn");

using namespace xtgrad;
namespace ta = nn::tutorial_a;
namespace tb = nn::tutorial_b;
namespace tc = nn::tutorial_c;
namespace td = nn::tutorial_d;

using test::same_module;

TEST_CASE("module options: tutorial A, Options or the notebook's positional arguments build one module") {
    same_module([] { return ta::MultiHeadAttention(ta::MultiHeadAttentionOptions(8, 2).dropout(0.1f).split(ta::HeadSplit::view_only)); },
                [] { return ta::MultiHeadAttention(8, 2, 0.1f, {ta::HeadSplit::view_only}); });
    same_module([] { return ta::EncoderLayer(ta::EncoderLayerOptions(8, 2).ffn_dim(12).layer_norm(ta::LayerNormKind::custom)); },
                [] { return ta::EncoderLayer(8, 2, 12, 0.f, {.layer_norm = ta::LayerNormKind::custom}); });
    same_module([] { return ta::DecoderLayer(ta::DecoderLayerOptions(8, 2).ffn_dim(12)); }, [] { return ta::DecoderLayer(8, 2, 12); });
    same_module([] { return ta::PositionalWiseFeedForward(ta::PositionalWiseFeedForwardOptions(8, 12).dropout(0.2f)); },
                [] { return ta::PositionalWiseFeedForward(8, 12, 0.2f); });
    same_module([] { return ta::Transformer(ta::TransformerOptions(9, 5, 7, 6).num_layers(1).model_dim(8).num_heads(2).ffn_dim(12)); },
                [] { return ta::Transformer(9, 5, 7, 6, 1, 8, 2, 12); });
    const ta::MultiHeadAttention literal(ta::MultiHeadAttentionOptions(64, 8).scale(ta::ScaleRule::dk_over_heads));
    CHECK(literal.options.scale == ta::ScaleRule::dk_over_heads);
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

TEST_CASE("module options: XTGRAD_OPTIONS_CONSTRUCTORS takes an Options (any value category) or its constructor's arguments") {
    // An lvalue Options, const or not, goes to the Options constructor (not back through the
    // forwarding one, which would recurse); the Options' arguments build the same module.
    tb::MultiHeadAttentionOptions mutable_options(8, 2);
    const tb::MultiHeadAttentionOptions const_options(8, 4);
    CHECK(tb::MultiHeadAttention(mutable_options).num_heads == 2);
    CHECK(tb::MultiHeadAttention(const_options).num_heads == 4);
    CHECK(tb::MultiHeadAttention(tb::MultiHeadAttentionOptions(8, 1)).num_heads == 1);
    CHECK(tc::ScaledDotProductAttention(5).d_k == 5);
    same_module([] { return tc::EncoderLayer(tc::EncoderLayerOptions(8, 2, 12, 3, 5)); }, [] { return tc::EncoderLayer(8, 2, 12, 3, 5); });
    // Only the Options' constructor arguments are accepted, and never implicitly.
    static_assert(std::is_constructible_v<tb::MultiHeadAttention, std::size_t, std::size_t>);
    static_assert(!std::is_constructible_v<tb::MultiHeadAttention, std::size_t>);
    static_assert(!std::is_constructible_v<tb::MultiHeadAttention, std::string, std::size_t>);
    static_assert(!std::is_convertible_v<tb::MultiHeadAttentionOptions, tb::MultiHeadAttention>);
    static_assert(!std::is_convertible_v<std::size_t, tc::ScaledDotProductAttention>);
    // and bad sizes still get the module's error
    test::expect_error([] { tb::MultiHeadAttention(6, 4); }, {"MultiHeadAttention", "6", "4"});
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

TEST_CASE("module options: tutorial A's Options constructors are the real ones; the positional ones forward") {
    same_module([] { return ta::Encoder(ta::EncoderOptions(9, 5).num_layers(1).model_dim(8).num_heads(2).ffn_dim(12)); },
                [] { return ta::Encoder(9, 5, 1, 8, 2, 12); });
    same_module([] { return ta::Decoder(ta::DecoderOptions(9, 5).num_layers(2).model_dim(8).num_heads(2).ffn_dim(12)); },
                [] { return ta::Decoder(9, 5, 2, 8, 2, 12); });
    same_module([] { return ta::PositionalEncoding(ta::PositionalEncodingOptions(8, 5)); }, [] { return ta::PositionalEncoding(8, 5); });
    CHECK(ta::ScaledDotProductAttention(ta::ScaledDotProductAttentionOptions().attention_dropout(0.3f)).attention_dropout ==
          ta::ScaledDotProductAttention(0.3f).attention_dropout);
    // errata(Options) sets the three switches at once, as the positional constructors' last argument
    ta::MultiHeadAttentionOptions o(8, 2);
    CHECK(&o.errata({ta::HeadSplit::view_only, ta::ScaleRule::dk_over_heads, ta::LayerNormKind::custom}) == &o);
    CHECK(o.split() == ta::HeadSplit::view_only);
    CHECK(o.scale() == ta::ScaleRule::dk_over_heads);
    CHECK(o.layer_norm() == ta::LayerNormKind::custom);
    // a stack's options reach every layer
    const ta::Encoder encoder(ta::EncoderOptions(9, 5).num_layers(1).model_dim(8).num_heads(2).ffn_dim(12).split(ta::HeadSplit::view_only));
    CHECK((*encoder.encoder_layers)[0].attention->options.split == ta::HeadSplit::view_only);
    test::expect_error([] { ta::Encoder(ta::EncoderOptions(9, 5).model_dim(8).num_heads(3)); },
                       {"MultiHeadAttention", "model_dim 8", "num_heads 3"});
}

TEST_CASE("module options: tutorial C's TransformerOptions are the lesson's globals as chained setters") {
    static_assert(std::is_same_v<tc::Config, tc::Config>);
    static_assert(std::is_same_v<tc::Config, tc::Config>);
    tc::Config o;
    CHECK(&o.d_model(8).d_ff(12).d_k(3).d_v(5).n_layers(1).n_heads(2) == &o);
    CHECK(&o.src_vocab_size(7).tgt_vocab_size(6).src_len(6).tgt_len(5).positions(tc::PositionScheme::literal) == &o);
    CHECK(o.d_model() == 8);
    CHECK(o.positions() == tc::PositionScheme::literal);
    // every layer of both stacks reads the same globals
    CHECK(o.encoder_layer().d_ff() == 12);
    CHECK(o.decoder_layer().d_v() == 5);
    same_module([&] { return tc::EncoderLayer(o.encoder_layer()); }, [] { return tc::EncoderLayer(8, 2, 12, 3, 5); });
    same_module([&] { return tc::DecoderLayer(o.decoder_layer()); }, [] { return tc::DecoderLayer(8, 2, 12, 3, 5); });
    const tc::Transformer model(o);
    CHECK(model.encoder->options.src_len() == 6);
    CHECK(model.decoder->options.tgt_vocab_size() == 6);
    CHECK(model.encoder->pos_emb->weight.shape() == Shape{7, 8});  // src_len + 1 rows
    CHECK(model.projection->weight.shape() == Shape{6, 8});
    test::expect_error([] { tc::Transformer(tc::Config().d_model(8).d_ff(12).n_layers(1).n_heads(0)); },
                       {"MultiHeadAttention", "n_heads"});
    test::expect_error([] { tc::Encoder(tc::Config().d_model(0).n_layers(0)); }, {"tutorial_c::Encoder", "d_model", "got 0"});
    test::expect_error([] { tc::Decoder(tc::Config().d_model(0).n_layers(0)); }, {"tutorial_c::Decoder", "d_model", "got 0"});
}

TEST_CASE("module options: tutorial D's stacks, the Options constructor is the real one; torch's positional arguments forward") {
    manual_seed(4);
    const auto enc_layer = std::make_shared<td::TransformerEncoderLayer>(td::TransformerEncoderLayerOptions(8, 2).dim_feedforward(12));
    const auto dec_layer = std::make_shared<td::TransformerDecoderLayer>(td::TransformerDecoderLayerOptions(8, 2).dim_feedforward(12));
    same_module([&] { return td::TransformerEncoder(td::TransformerEncoderOptions(enc_layer, 2).pe(td::PositionalEncodingAt::none)); },
                [&] { return td::TransformerEncoder(*enc_layer, 2, nullptr, td::PositionalEncodingAt::none); });
    same_module([&] { return td::TransformerDecoder(td::TransformerDecoderOptions(dec_layer, 2)); },
                [&] { return td::TransformerDecoder(*dec_layer, 2); });
    const td::TransformerEncoder encoder(*enc_layer, 1, nullptr, td::PositionalEncodingAt::none, 64);
    CHECK(encoder.pe == td::PositionalEncodingAt::none);
    CHECK(encoder.pe_max_len == 64);
    CHECK(enc_layer.use_count() == 1);  // the positional constructor only borrowed the layer
    test::expect_error([] { td::TransformerDecoder(td::TransformerDecoderOptions(nullptr, 2)); },
                       {"TransformerDecoder", "decoder_layer is null"});
}

TEST_SUITE_END();
