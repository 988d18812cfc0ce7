// Runners for tutorial D's modules (docs/fixtures.md, section Config keys): each module is
// rebuilt from meta.json's config exactly as a user would build it, and called with the
// fixture's inputs by name (absent masks are None).
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/nn/tutorial_d/tutorial_d.hpp>
#include "tools/parity/module_runner.hpp"
#include "tools/parity/register_all.hpp"

namespace xtgrad::parity {

namespace {

using namespace nn::tutorial_d;

// A mask input as the fixture stores it: bool (true = masked) or additive float; None if absent.
AttentionMask mask_input(const Fixture& f, Inputs& in, const std::string& name) {
    if (!in.has(name)) return {};
    const std::string dtype = f.dtype("input." + name);
    if (dtype == "bool" || dtype == "|b1") return in.mask(name);
    return in.tensor(name);
}

// The layer keywords every D layer, stack and Transformer case shares (docs/fixtures.md, section Config keys).
template <class Options>
Options with_layer_keywords(const Fixture& f, Options o) {
    return o.dim_feedforward(static_cast<std::size_t>(f.cfg_int("dim_feedforward")))
        .dropout(0.f)  // fixtures run without dropout (docs/fixtures.md, section Seeding)
        .activation(activation_from_string(f.cfg_str("activation", "relu")))
        .layer_norm_eps(static_cast<float>(f.cfg_float("layer_norm_eps")))
        .batch_first(f.cfg_bool("batch_first"))
        .norm_first(f.cfg_bool("norm_first"));
}

template <class LayerOptions>
LayerOptions layer_options(const Fixture& f) {
    return with_layer_keywords(f, LayerOptions(static_cast<std::size_t>(f.cfg_int("d_model")),
                                               static_cast<std::size_t>(f.cfg_int("nhead"))));
}

std::shared_ptr<nn::LayerNorm> final_norm(const Fixture& f) {
    if (!f.has("param.norm.weight")) return nullptr;
    return std::make_shared<nn::LayerNorm>(f.cfg_int("d_model"), static_cast<float>(f.cfg_float("layer_norm_eps")));
}

PositionalEncodingAt pe_placement(const Fixture& f) { return positional_encoding_from_string(f.cfg_str("pe", "none")); }

// The custom encoder of the transformer_d__custom_encoder fixture, as a user writes one: memory =
// proj(src), the masks ignored (tools/fixtures/reference_d.py's LinearEncoder).
struct LinearEncoder : EncoderBase {
    explicit LinearEncoder(std::size_t d_model) {
        proj = register_module("proj", std::make_shared<nn::Linear>(d_model, d_model));
    }
    Tensor forward(const Tensor& src, const AttentionMask&, const AttentionMask&) const override {
        return proj->forward(src);
    }
    std::shared_ptr<nn::Linear> proj;
};

Outputs output_of(const Tensor& y) {
    Outputs out;
    out.output = y;
    return out;
}

// register_module_runner, with the fixture handed to forward (it says which masks are bool).
template <class M>
void register_d(const std::string& id, std::function<std::shared_ptr<M>(const Fixture&)> build,
                std::function<Outputs(M&, const Fixture&, Inputs&)> forward) {
    register_runner(id, [build, forward](const Fixture& f, Report& r) {
        std::shared_ptr<M> m = build(f);
        check_module(f, r, m.get(), [&](Inputs& in) { return forward(*m, f, in); });
    });
    register_builder(id, [build](const Fixture& f) -> std::shared_ptr<nn::Module> { return build(f); });
}

void register_functions() {
    register_runner("positional_encoding_d", [](const Fixture& f, Report& r) {
        check_module(f, r, nullptr, [&](Inputs& in) {
            return output_of(positional_encoding(in.tensor("x"), f.cfg_int("num_features"),
                                                 static_cast<float>(f.cfg_float("dropout_p")), f.cfg_int("max_len"), 1));
        });
    });

    register_runner("sdpa_d", [](const Fixture& f, Report& r) {
        check_module(f, r, nullptr, [&](Inputs& in) {
            const nn::AttentionResult a = scaled_dot_product_attention(in.tensor("q"), in.tensor("k"), in.tensor("v"),
                                                                   mask_input(f, in, "attn_mask"));
            Outputs out = output_of(a.context);
            out.aux["attn"] = a.weights;
            return out;
        });
    });

    register_runner("in_projection_packed_d", [](const Fixture& f, Report& r) {
        check_module(f, r, nullptr, [&](Inputs& in) {
            // x: q, k and v are one tensor; kv: k and v are one tensor (torch's "is" branches)
            const Tensor q = in.tensor(in.has("x") ? "x" : "q");
            const Tensor k = in.has("x") ? q : in.tensor(in.has("kv") ? "kv" : "k");
            const Tensor v = in.has("x") ? q : in.has("kv") ? k : in.tensor("v");
            const InProjection p = in_projection_packed(q, k, v, in.tensor("w"), in.has("b") ? in.tensor("b") : Tensor());
            return output_of(cat({p.q, p.k, p.v}, 0));
        });
    });

    register_runner("mha_forward_d", [](const Fixture& f, Report& r) {
        check_module(f, r, nullptr, [&](Inputs& in) {
            const auto optional = [&](const char* name) { return in.has(name) ? in.tensor(name) : Tensor(); };
            const MultiheadAttentionOutput a = multi_head_attention_forward(
                in.tensor("query"), in.tensor("key"), in.tensor("value"),
                MultiheadAttentionForwardFuncOptions(f.cfg_int("embed_dim"), f.cfg_int("num_heads"),
                                                     in.tensor("in_proj_weight"), in.tensor("in_proj_bias"),
                                                     optional("bias_k"), optional("bias_v"), f.cfg_bool("add_zero_attn"),
                                                     0.f, in.tensor("out_proj_weight"), in.tensor("out_proj_bias"))
                    .training(false)
                    .key_padding_mask(mask_input(f, in, "key_padding_mask"))
                    .attn_mask(mask_input(f, in, "attn_mask"))
                    .static_k(optional("static_k"))
                    .static_v(optional("static_v"))
                    .average_attn_weights(f.cfg_bool("average_attn_weights", true)));
            Outputs out = output_of(a.attn_output);
            out.aux["attn_output_weights"] = a.attn_output_weights;
            return out;
        });
    });

    register_runner("masks_d", [](const Fixture& f, Report& r) {
        check_module(f, r, nullptr, [&](Inputs&) {
            return output_of(Transformer::generate_square_subsequent_mask(f.cfg_int("sz")));
        });
    });
}

void register_d_attention() {
    register_d<MultiheadAttention>(
        "mha_d",
        [](const Fixture& f) {
            return std::make_shared<MultiheadAttention>(
                MultiheadAttentionOptions(f.cfg_int("embed_dim"), f.cfg_int("num_heads"))
                    .bias(f.cfg_bool("bias", true))
                    .add_bias_kv(f.cfg_bool("add_bias_kv", false))
                    .add_zero_attn(f.cfg_bool("add_zero_attn", false))
                    .kdim(f.cfg_int("kdim"))
                    .vdim(f.cfg_int("vdim"))
                    .batch_first(f.cfg_bool("batch_first")));
        },
        [](MultiheadAttention& m, const Fixture& f, Inputs& in) {
            const bool self = in.has("x");  // variant `self`: one tensor as query, key and value
            const Tensor query = in.tensor(self ? "x" : "query");
            const Tensor key = self ? query : in.tensor("key");
            const Tensor value = self ? query : in.tensor("value");
            const auto [output, weights] = m.forward(query, key, value, mask_input(f, in, "key_padding_mask"),
                                                     f.cfg_bool("need_weights", true), mask_input(f, in, "attn_mask"),
                                                     f.cfg_bool("average_attn_weights", true));
            Outputs out = output_of(output);
            out.aux["attn_weights"] = weights;
            return out;
        });
}

void register_d_layers() {
    register_d<TransformerEncoderLayer>(
        "transformer_encoder_layer_d",
        [](const Fixture& f) { return std::make_shared<TransformerEncoderLayer>(layer_options<TransformerEncoderLayerOptions>(f)); },
        [](TransformerEncoderLayer& m, const Fixture& f, Inputs& in) {
            return output_of(m.forward(in.tensor("src"), mask_input(f, in, "src_mask"),
                                     mask_input(f, in, "src_key_padding_mask")));
        });

    register_d<TransformerDecoderLayer>(
        "transformer_decoder_layer_d",
        [](const Fixture& f) { return std::make_shared<TransformerDecoderLayer>(layer_options<TransformerDecoderLayerOptions>(f)); },
        [](TransformerDecoderLayer& m, const Fixture& f, Inputs& in) {
            return output_of(m.forward(in.tensor("tgt"), in.tensor("memory"), mask_input(f, in, "tgt_mask"),
                                     mask_input(f, in, "memory_mask"), mask_input(f, in, "tgt_key_padding_mask"),
                                     mask_input(f, in, "memory_key_padding_mask")));
        });
}

void register_d_stacks() {
    register_d<TransformerEncoder>(
        "transformer_encoder_d",
        [](const Fixture& f) {
            const TransformerEncoderLayer layer(layer_options<TransformerEncoderLayerOptions>(f));
            return std::make_shared<TransformerEncoder>(layer, f.cfg_int("num_layers"), final_norm(f), pe_placement(f),
                                                        f.cfg_int("pe_max_len"));
        },
        [](TransformerEncoder& m, const Fixture& f, Inputs& in) {
            return output_of(m.forward(in.tensor("src"), mask_input(f, in, "src_mask"),
                                     mask_input(f, in, "src_key_padding_mask")));
        });

    register_d<TransformerDecoder>(
        "transformer_decoder_d",
        [](const Fixture& f) {
            const TransformerDecoderLayer layer(layer_options<TransformerDecoderLayerOptions>(f));
            return std::make_shared<TransformerDecoder>(layer, f.cfg_int("num_layers"), final_norm(f));
        },
        [](TransformerDecoder& m, const Fixture& f, Inputs& in) {
            return output_of(m.forward(in.tensor("tgt"), in.tensor("memory"), mask_input(f, in, "tgt_mask"),
                                     mask_input(f, in, "memory_mask"), mask_input(f, in, "tgt_key_padding_mask"),
                                     mask_input(f, in, "memory_key_padding_mask")));
        });

    register_d<Transformer>(
        "transformer_d",
        [](const Fixture& f) {
            const auto n = [&f](const char* key) { return static_cast<std::size_t>(f.cfg_int(key)); };
            TransformerOptions o =
                with_layer_keywords(f, TransformerOptions(n("d_model"), n("nhead"), n("num_encoder_layers"),
                                                          n("num_decoder_layers")))
                    .pe(pe_placement(f))
                    .pe_max_len(n("pe_max_len"));
            const std::string custom = f.cfg_str("custom_encoder", "");
            if (custom == "linear") o.custom_encoder(std::make_shared<LinearEncoder>(n("d_model")));
            else if (!custom.empty()) fail("transformer_d: unknown custom_encoder '{}' (linear)", custom);
            return std::make_shared<Transformer>(o);
        },
        [](Transformer& m, const Fixture& f, Inputs& in) {
            return output_of(m.forward(in.tensor("src"), in.tensor("tgt"), mask_input(f, in, "src_mask"),
                                     mask_input(f, in, "tgt_mask"), mask_input(f, in, "memory_mask"),
                                     mask_input(f, in, "src_key_padding_mask"),
                                     mask_input(f, in, "tgt_key_padding_mask"),
                                     mask_input(f, in, "memory_key_padding_mask")));
        });
}

}  // namespace

void register_tutorial_d_runners() {
    register_functions();
    register_d_attention();
    register_d_layers();
    register_d_stacks();
}

}  // namespace xtgrad::parity
