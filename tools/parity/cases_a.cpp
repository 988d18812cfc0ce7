// Runners for tutorial A's modules (docs/fixtures.md, section Config keys). Each rebuilds the
// module from meta.json's config and options, calls it with the fixture's inputs in
// call_order, and returns the output plus the aux outputs under their meta names.
#include <xtgrad/nn/tutorial_a/tutorial_a.hpp>
#include <xtgrad/nn/tutorial_c/poswise_feed_forward_net.hpp>
#include "tools/parity/module_runner.hpp"
#include "tools/parity/register_all.hpp"

namespace xtgrad::parity {

namespace ta = nn::tutorial_a;
namespace tc = nn::tutorial_c;

namespace {

// meta.options: a_split, a_scale, a_ln (section 13); an absent key means the intent.
ta::Errata options_of(const Fixture& f) {
    ta::Errata o;
    o.split = f.option("a_split", "transpose") == "literal" ? ta::HeadSplit::view_only : ta::HeadSplit::transpose;
    o.scale = f.option("a_scale", "sqrt_dk") == "literal" ? ta::ScaleRule::dk_over_heads : ta::ScaleRule::sqrt_dk;
    o.layer_norm = f.option("a_ln", "torch") == "custom" ? ta::LayerNormKind::custom : ta::LayerNormKind::torch;
    return o;
}

std::size_t cfg(const Fixture& f, const char* key) { return static_cast<std::size_t>(f.cfg_int(key)); }

Outputs with_output(const Tensor& y) {
    Outputs out;
    out.output = y;
    return out;
}

// aux "<prefix>.{i}": one attention map per layer
void add_per_layer(Outputs& out, const std::string& prefix, const std::vector<Tensor>& maps) {
    for (std::size_t i = 0; i < maps.size(); ++i) out.aux[prefix + "." + std::to_string(i)] = maps[i];
}

// An optional mask input: the notebook's attn_mask=None when the fixture has none.
struct OptionalMask {
    OptionalMask(Inputs& in, const std::string& name) : given(in.has(name)), mask(given ? in.mask(name) : Mask()) {}
    const Mask* get() const { return given ? &mask : nullptr; }
    bool given;
    Mask mask;
};

void register_positional_encoding() {
    // Besides the lookup, compare the table xtgrad computes with the fixture's, before the
    // fixture's table replaces it.
    register_runner("positional_encoding_a", [](const Fixture& f, Report& r) {
        auto m = std::make_shared<ta::PositionalEncoding>(cfg(f, "d_model"), cfg(f, "max_seq_len"));
        r.compare("computed table vs param.position_encoding.weight", m->position_encoding->weight.data(),
                  f.floats("param.position_encoding.weight"), f.tolerance());
        check_module(f, r, m.get(), [&](Inputs& in) {
            const Ids lengths = in.ids("input_len");
            Outputs out = with_output(m->forward(lengths));
            out.aux_ids["positions"] = m->positions(lengths);
            return out;
        });
    });
}

void register_a_attention() {
    register_runner("sdpa", [](const Fixture& f, Report& r) {
        auto m = std::make_shared<ta::ScaledDotProductAttention>();
        check_module(f, r, m.get(), [&](Inputs& in) {
            const OptionalMask mask(in, "attn_mask");
            const float scale = static_cast<float>(f.cfg_float("scale"));
            nn::AttentionResult a = m->forward(in.tensor("q"), in.tensor("k"), in.tensor("v"), scale, mask.get());
            Outputs out = with_output(a.context);
            out.aux["attention"] = a.weights;
            return out;
        });
    });

    register_module_runner<ta::MultiHeadAttention>(
        "mha_a",
        [](const Fixture& f) {
            return std::make_shared<ta::MultiHeadAttention>(cfg(f, "model_dim"), cfg(f, "num_heads"), 0.f, options_of(f));
        },
        [](ta::MultiHeadAttention& m, Inputs& in) {
            const OptionalMask mask(in, "attn_mask");
            nn::AttentionResult a = m.forward(in.tensor("key"), in.tensor("value"), in.tensor("query"), mask.get());
            Outputs out = with_output(a.context);
            out.aux["attention"] = a.weights;
            return out;
        });
}

void register_feed_forward() {
    // The shared block: A's PositionalWiseFeedForward (w1/w2), or with c_names C's PoswiseFeedForwardNet.
    register_module_runner<nn::ConvFeedForward>(
        "ffn_conv1d",
        [](const Fixture& f) -> std::shared_ptr<nn::ConvFeedForward> {
            if (f.option("ffn_names", "a") == "c")
                return std::make_shared<tc::PoswiseFeedForwardNet>(cfg(f, "model_dim"), cfg(f, "ffn_dim"));
            return std::make_shared<ta::PositionalWiseFeedForward>(
                ta::PositionalWiseFeedForwardOptions(cfg(f, "model_dim"), cfg(f, "ffn_dim")).layer_norm(options_of(f).layer_norm));
        },
        [](nn::ConvFeedForward& m, Inputs& in) { return with_output(m.forward(in.tensor("x"))); });
}

void register_a_layers() {
    register_module_runner<ta::EncoderLayer>(
        "encoder_layer_a",
        [](const Fixture& f) {
            return std::make_shared<ta::EncoderLayer>(cfg(f, "model_dim"), cfg(f, "num_heads"), cfg(f, "ffn_dim"), 0.f,
                                                      options_of(f));
        },
        [](ta::EncoderLayer& m, Inputs& in) {
            const OptionalMask mask(in, "attn_mask");
            ta::EncoderLayerOutput y = m.forward(in.tensor("inputs"), mask.get());
            Outputs out = with_output(y.output);
            out.aux["attention"] = y.attention;
            return out;
        });

    register_module_runner<ta::DecoderLayer>(
        "decoder_layer_a",
        [](const Fixture& f) {
            return std::make_shared<ta::DecoderLayer>(cfg(f, "model_dim"), cfg(f, "num_heads"), cfg(f, "ffn_dim"), 0.f,
                                                      options_of(f));
        },
        [](ta::DecoderLayer& m, Inputs& in) {
            const OptionalMask self_mask(in, "self_attn_mask"), context_mask(in, "context_attn_mask");
            ta::DecoderLayerOutput y =
                m.forward(in.tensor("dec_inputs"), in.tensor("enc_outputs"), self_mask.get(), context_mask.get());
            Outputs out = with_output(y.output);
            out.aux["self_attention"] = y.self_attention;
            out.aux["context_attention"] = y.context_attention;
            return out;
        });
}

void register_a_stacks() {
    register_module_runner<ta::Encoder>(
        "encoder_a",
        [](const Fixture& f) {
            return std::make_shared<ta::Encoder>(cfg(f, "vocab_size"), cfg(f, "max_seq_len"), cfg(f, "num_layers"),
                                                 cfg(f, "model_dim"), cfg(f, "num_heads"), cfg(f, "ffn_dim"), 0.f,
                                                 options_of(f));
        },
        [](ta::Encoder& m, Inputs& in) {
            ta::EncoderOutput y = m.forward(in.ids("inputs"), in.ids("inputs_len"));
            Outputs out = with_output(y.output);
            add_per_layer(out, "attention", y.attentions);
            return out;
        });

    register_module_runner<ta::Decoder>(
        "decoder_a",
        [](const Fixture& f) {
            return std::make_shared<ta::Decoder>(cfg(f, "vocab_size"), cfg(f, "max_seq_len"), cfg(f, "num_layers"),
                                                 cfg(f, "model_dim"), cfg(f, "num_heads"), cfg(f, "ffn_dim"), 0.f,
                                                 options_of(f));
        },
        [](ta::Decoder& m, Inputs& in) {
            const OptionalMask context_mask(in, "context_attn_mask");
            ta::DecoderOutput y =
                m.forward(in.ids("inputs"), in.ids("inputs_len"), in.tensor("enc_output"), context_mask.get());
            Outputs out = with_output(y.output);
            add_per_layer(out, "self_attention", y.self_attentions);
            add_per_layer(out, "context_attention", y.context_attentions);
            return out;
        });

    register_module_runner<ta::Transformer>(
        "transformer_a",
        [](const Fixture& f) {
            return std::make_shared<ta::Transformer>(cfg(f, "src_vocab_size"), cfg(f, "src_max_len"),
                                                     cfg(f, "tgt_vocab_size"), cfg(f, "tgt_max_len"), cfg(f, "num_layers"),
                                                     cfg(f, "model_dim"), cfg(f, "num_heads"), cfg(f, "ffn_dim"), 0.f,
                                                     options_of(f));
        },
        [](ta::Transformer& m, Inputs& in) {
            ta::TransformerOutput y = m.forward(in.ids("src_seq"), in.ids("src_len"), in.ids("tgt_seq"), in.ids("tgt_len"));
            Outputs out = with_output(y.logits);
            out.aux["probs"] = ta::Transformer::probabilities(y.logits);
            add_per_layer(out, "enc_self_attn", y.enc_self_attn);
            add_per_layer(out, "dec_self_attn", y.dec_self_attn);
            add_per_layer(out, "ctx_attn", y.ctx_attn);
            return out;
        });
}

void register_masks() {
    register_runner("masks_a", [](const Fixture& f, Report& r) {
        check_module(f, r, nullptr, [](Inputs& in) {
            const Ids src = in.ids("src_seq"), tgt = in.ids("tgt_seq");
            Outputs out;
            out.output_mask = ta::decoder_self_mask(tgt);
            out.aux_masks["encoder_self_mask"] = ta::padding_mask(src, src);
            out.aux_masks["sequence_mask"] = ta::sequence_mask(tgt);
            out.aux_masks["context_mask"] = ta::padding_mask(src, tgt);
            return out;
        });
    });
}

}  // namespace

void register_tutorial_a_runners() {
    register_positional_encoding();
    register_a_attention();
    register_feed_forward();
    register_a_layers();
    register_a_stacks();
    register_masks();
}

}  // namespace xtgrad::parity
