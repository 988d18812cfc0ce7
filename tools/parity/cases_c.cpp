// Runners for tutorial C's modules (docs/fixtures.md, section Config keys). Each rebuilds the
// module from meta.json's config (and option c_positions) and calls it with the fixture's
// inputs in call order. (C's PoswiseFeedForwardNet is the case ffn_conv1d__c_names, run by
// tutorial A's ffn_conv1d runner: one class serves both.)
#include <xtgrad/nn/tutorial_c/tutorial_c.hpp>
#include "tools/parity/models.hpp"
#include "tools/parity/module_runner.hpp"
#include "tools/parity/register_all.hpp"

namespace xtgrad::parity {

namespace c = nn::tutorial_c;

namespace {

// d_k and d_v are config keys of mha_c and transformer_c; the other cases use d_model / n_heads.
std::size_t head_size(const Fixture& f, const char* key) {
    return f.config().contains(key) ? f.cfg_int(key, 1) : f.cfg_int("d_model") / f.cfg_int("n_heads", 1);
}

Outputs with_attention(const Tensor& output, std::initializer_list<std::pair<const char*, Tensor>> aux) {
    Outputs out;
    out.output = output;
    for (const auto& [name, t] : aux) out.aux.emplace(name, t);
    return out;
}

void add_numbered(Outputs& out, const std::string& name, const std::vector<Tensor>& per_layer) {
    for (std::size_t i = 0; i < per_layer.size(); ++i) out.aux.emplace(name + "." + std::to_string(i), per_layer[i]);
}

}  // namespace

// transformer_c, and train_transformer_c (tools/parity/cases_train.cpp), whose config has no
// d_k, d_v: then d_model / n_heads.
c::Config transformer_c_config(const Fixture& f) {
    return c::Config()
        .src_vocab_size(f.cfg_int("src_vocab_size"))
        .tgt_vocab_size(f.cfg_int("tgt_vocab_size"))
        .src_len(f.cfg_int("src_len"))
        .tgt_len(f.cfg_int("tgt_len"))
        .d_model(f.cfg_int("d_model"))
        .d_ff(f.cfg_int("d_ff"))
        .d_k(head_size(f, "d_k"))
        .d_v(head_size(f, "d_v"))
        .n_layers(f.cfg_int("n_layers"))
        .n_heads(f.cfg_int("n_heads"))
        .positions(f.option("c_positions", "sequential") == "literal" ? c::PositionScheme::literal
                                                                      : c::PositionScheme::sequential);
}

void register_tutorial_c_runners() {
    // a table the port computes itself: no state, no gradient
    register_runner("sinusoid_table_c", [](const Fixture& f, Report& r) {
        check_module(f, r, nullptr, [&](Inputs&) {
            Outputs out;
            out.output = c::get_sinusoid_encoding_table(f.cfg_int("n_position"), f.cfg_int("d_model"));
            return out;
        });
    });

    register_module_runner<c::ScaledDotProductAttention>(
        "sdpa_c", [](const Fixture& f) { return std::make_shared<c::ScaledDotProductAttention>(f.cfg_int("d_k")); },
        [](c::ScaledDotProductAttention& m, Inputs& in) {
            const nn::AttentionResult a = m.forward(in.tensor("Q"), in.tensor("K"), in.tensor("V"), in.mask("attn_mask"));
            return with_attention(a.context, {{"attn", a.weights}});
        });

    register_module_runner<c::MultiHeadAttention>(
        "mha_c",
        [](const Fixture& f) {
            return std::make_shared<c::MultiHeadAttention>(f.cfg_int("d_model"), f.cfg_int("n_heads"), head_size(f, "d_k"),
                                                           head_size(f, "d_v"));
        },
        [](c::MultiHeadAttention& m, Inputs& in) {
            auto [output, attn] = m.forward(in.tensor("Q"), in.tensor("K"), in.tensor("V"), in.mask("attn_mask"));
            return with_attention(output, {{"attn", attn}});
        });

    register_module_runner<c::EncoderLayer>(
        "encoder_layer_c",
        [](const Fixture& f) {
            return std::make_shared<c::EncoderLayer>(f.cfg_int("d_model"), f.cfg_int("n_heads"), f.cfg_int("d_ff"),
                                                     head_size(f, "d_k"), head_size(f, "d_v"));
        },
        [](c::EncoderLayer& m, Inputs& in) {
            auto [enc_outputs, attn] = m.forward(in.tensor("enc_inputs"), in.mask("enc_self_attn_mask"));
            return with_attention(enc_outputs, {{"attn", attn}});
        });

    register_module_runner<c::DecoderLayer>(
        "decoder_layer_c",
        [](const Fixture& f) {
            return std::make_shared<c::DecoderLayer>(f.cfg_int("d_model"), f.cfg_int("n_heads"), f.cfg_int("d_ff"),
                                                     head_size(f, "d_k"), head_size(f, "d_v"));
        },
        [](c::DecoderLayer& m, Inputs& in) {
            auto [dec_outputs, dec_self_attn, dec_enc_attn] =
                m.forward(in.tensor("dec_inputs"), in.tensor("enc_outputs"), in.mask("dec_self_attn_mask"),
                          in.mask("dec_enc_attn_mask"));
            return with_attention(dec_outputs, {{"dec_self_attn", dec_self_attn}, {"dec_enc_attn", dec_enc_attn}});
        });

    // transformer_c and transformer_c__literal_positions (option c_positions)
    register_module_runner<c::Transformer>(
        "transformer_c", [](const Fixture& f) { return std::make_shared<c::Transformer>(transformer_c_config(f)); },
        [](c::Transformer& m, Inputs& in) {
            c::TransformerOutput y = m.forward(in.ids("enc_inputs"), in.ids("dec_inputs"));
            Outputs out;
            out.output = y.logits;
            add_numbered(out, "enc_self_attn", y.enc_self_attns);
            add_numbered(out, "dec_self_attn", y.dec_self_attns);
            add_numbered(out, "dec_enc_attn", y.dec_enc_attns);
            return out;
        });

    // masks and positions: bool and int64 outputs, compared exactly
    register_runner("masks_c", [](const Fixture& f, Report& r) {
        check_module(f, r, nullptr, [](Inputs& in) {
            const Ids enc = in.ids("enc_inputs"), dec = in.ids("dec_inputs");
            Outputs out;
            out.output_mask = c::get_dec_self_attn_mask(dec);
            out.aux_masks.emplace("enc_self_attn_mask", c::get_attn_pad_mask(enc, enc));
            out.aux_masks.emplace("dec_enc_attn_mask", c::get_attn_pad_mask(dec, enc));
            out.aux_masks.emplace("subsequent_mask", c::get_attn_subsequent_mask(dec));
            out.aux_ids.emplace("enc_positions", c::positions(enc, c::PositionScheme::sequential, c::Side::encoder));
            out.aux_ids.emplace("dec_positions", c::positions(dec, c::PositionScheme::sequential, c::Side::decoder));
            return out;
        });
    });
}

}  // namespace xtgrad::parity
