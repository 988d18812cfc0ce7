// Runners for tutorial B's modules (docs/fixtures.md, section Config keys). Each rebuilds the
// module from meta.json's config and calls it with the fixture's inputs in call order.
#include <xtgrad/nn/tutorial_b/tutorial_b.hpp>
#include "tools/parity/models.hpp"
#include "tools/parity/module_runner.hpp"
#include "tools/parity/register_all.hpp"

namespace xtgrad::parity {

namespace b = nn::tutorial_b;

namespace {

Outputs just(Tensor output) {
    Outputs out;
    out.output = std::move(output);
    return out;
}

}  // namespace

// transformer_b, and train_transformer_b (tools/parity/cases_train.cpp); dropout 0, as in every
// fixture.
std::shared_ptr<b::Transformer> build_transformer_b(const Fixture& f) {
    return std::make_shared<b::Transformer>(f.cfg_int("src_vocab_size"), f.cfg_int("tgt_vocab_size"), f.cfg_int("d_model"),
                                            f.cfg_int("num_heads"), f.cfg_int("num_layers"), f.cfg_int("d_ff"),
                                            f.cfg_int("max_seq_length"), 0.f);
}

void register_tutorial_b_runners() {
    // mha_b and mha_b__tgt_mask: the same call, a src_mask (B,1,1,Lk) or tgt_mask (B,1,Lq,Lq)
    register_module_runner<b::MultiHeadAttention>(
        "mha_b",
        [](const Fixture& f) { return std::make_shared<b::MultiHeadAttention>(f.cfg_int("d_model"), f.cfg_int("num_heads")); },
        [](b::MultiHeadAttention& m, Inputs& in) {
            return just(m.forward(in.tensor("Q"), in.tensor("K"), in.tensor("V"), in.mask("mask")));
        });

    register_module_runner<b::PositionWiseFeedForward>(
        "ffn_linear",
        [](const Fixture& f) { return std::make_shared<b::PositionWiseFeedForward>(f.cfg_int("d_model"), f.cfg_int("d_ff")); },
        [](b::PositionWiseFeedForward& m, Inputs& in) { return just(m.forward(in.tensor("x"))); });

    register_module_runner<b::PositionalEncoding>(
        "positional_encoding_b",
        [](const Fixture& f) {
            return std::make_shared<b::PositionalEncoding>(f.cfg_int("d_model"), f.cfg_int("max_seq_length"));
        },
        [](b::PositionalEncoding& m, Inputs& in) { return just(m.forward(in.tensor("x"))); });

    register_module_runner<b::EncoderLayer>(
        "encoder_layer_b",
        [](const Fixture& f) {
            return std::make_shared<b::EncoderLayer>(f.cfg_int("d_model"), f.cfg_int("num_heads"), f.cfg_int("d_ff"), 0.f);
        },
        [](b::EncoderLayer& m, Inputs& in) { return just(m.forward(in.tensor("x"), in.mask("mask"))); });

    register_module_runner<b::DecoderLayer>(
        "decoder_layer_b",
        [](const Fixture& f) {
            return std::make_shared<b::DecoderLayer>(f.cfg_int("d_model"), f.cfg_int("num_heads"), f.cfg_int("d_ff"), 0.f);
        },
        [](b::DecoderLayer& m, Inputs& in) {
            return just(m.forward(in.tensor("x"), in.tensor("enc_output"), in.mask("src_mask"), in.mask("tgt_mask")));
        });

    register_module_runner<b::Transformer>(
        "transformer_b", build_transformer_b, [](b::Transformer& m, Inputs& in) { return just(m.forward(in.ids("src"), in.ids("tgt"))); });

    // generate_mask: bool outputs, compared exactly
    register_runner("masks_b", [](const Fixture& f, Report& r) {
        check_module(f, r, nullptr, [](Inputs& in) {
            auto [src_mask, tgt_mask] = b::generate_mask(in.ids("src"), in.ids("tgt"));
            Outputs out;
            out.output_mask = std::move(tgt_mask);
            out.aux_masks.emplace("src_mask", std::move(src_mask));
            return out;
        });
    });
}

}  // namespace xtgrad::parity
