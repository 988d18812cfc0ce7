// Transformer — tutorial D, "Transformer" (torch.nn.Transformer, plus the tutorial's
// positional encoding on src).
//
//   memory = encoder(src, src_mask, src_key_padding_mask)     encoder: layers + norm, adds P to src
//   output = decoder(tgt, memory, tgt_mask, memory_mask,
//                    tgt_key_padding_mask, memory_key_padding_mask)   decoder: layers + norm
// src (S, N, E), tgt (T, N, E) -> output (T, N, E); batch first if batch_first. src and tgt
// are already embedded; the caller adds a positional encoding to tgt (as with torch).
// State: exactly torch.nn.Transformer's: encoder.layers.{i}.*, encoder.norm.*,
// decoder.layers.{i}.*, decoder.norm.*. Every matrix is re-initialised with
// xavier_uniform_ (torch's and the tutorial's _reset_parameters).
// With pe = none the model is exactly torch.nn.Transformer. custom_encoder / custom_decoder
// replace the stacks the options would build (torch's keywords of the same names): any module
// deriving from EncoderBase / DecoderBase (encoder_decoder_base.hpp), a TransformerEncoder /
// TransformerDecoder of other sizes or one of your own; registered as encoder / decoder and
// re-initialised with the rest (xavier_uniform_ on every matrix), as torch's _reset_parameters does.
//
// Errata (docs/tutorial_d.md): the tutorial builds encoder_norm but constructs
// TransformerEncoder(encoder_layer, num_encoder_layers) without it, so its encoder has no
// final norm; xtgrad passes it, as torch does. Its encoder and decoder share one layer's
// weights across all their layers and add the positional encoding in every encoder layer
// (see encoder.hpp); its docstring says the layer counts default to 8, the code (and torch)
// to 6.
#pragma once

#include <xtgrad/nn/module.hpp>
#include <xtgrad/nn/tutorial_d/decoder.hpp>
#include <xtgrad/nn/tutorial_d/encoder.hpp>
#include <xtgrad/nn/options.hpp>

#include <memory>
#include <typeinfo>

namespace xtgrad::nn::tutorial_d {

// torch's Transformer(d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
// dim_feedforward=2048, dropout=0.1, activation=relu, custom_encoder=None, custom_decoder=None,
// layer_norm_eps=1e-5, batch_first=False, norm_first=False), plus pe / pe_max_len.
class TransformerOptions {
public:
    TransformerOptions(std::size_t d_model = 512, std::size_t nhead = 8, std::size_t num_encoder_layers = 6,
                       std::size_t num_decoder_layers = 6)
        : d_model_(d_model),
          nhead_(nhead),
          num_encoder_layers_(num_encoder_layers),
          num_decoder_layers_(num_decoder_layers) {}

    XTGRAD_ARG(std::size_t, d_model);
    XTGRAD_ARG(std::size_t, nhead);
    XTGRAD_ARG(std::size_t, num_encoder_layers);
    XTGRAD_ARG(std::size_t, num_decoder_layers);
    XTGRAD_ARG(std::size_t, dim_feedforward) = 2048;
    XTGRAD_ARG(float, dropout) = 0.1f;
    XTGRAD_ARG(Activation, activation) = Activation::relu;
    XTGRAD_ARG(std::shared_ptr<EncoderBase>, custom_encoder);  // null: built from these options
    XTGRAD_ARG(std::shared_ptr<DecoderBase>, custom_decoder);
    XTGRAD_ARG(float, layer_norm_eps) = 1e-5f;
    XTGRAD_ARG(bool, batch_first) = false;
    XTGRAD_ARG(bool, norm_first) = false;
    XTGRAD_ARG(PositionalEncodingAt, pe) = PositionalEncodingAt::encoder_input;  // none: exactly torch.nn.Transformer
    XTGRAD_ARG(std::size_t, pe_max_len) = 512;

public:
    TransformerEncoderLayerOptions encoder_layer() const;
    TransformerDecoderLayerOptions decoder_layer() const;
};

class Transformer : public Module {
public:
    explicit Transformer(const TransformerOptions& options = {});

    Tensor forward(const Tensor& src, const Tensor& tgt, const AttentionMask& src_mask = {},
                   const AttentionMask& tgt_mask = {}, const AttentionMask& memory_mask = {},
                   const AttentionMask& src_key_padding_mask = {}, const AttentionMask& tgt_key_padding_mask = {},
                   const AttentionMask& memory_key_padding_mask = {}) const;

    // The causal mask (sz, sz), additive float: 0 on and below the diagonal, -inf above,
    // so position i attends to positions 0..i only.
    static Tensor generate_square_subsequent_mask(std::size_t sz);

    // The encoder or decoder as its own type (TransformerEncoder unless a custom one was given);
    // an Error naming both types if it is not one.
    template <class M = TransformerEncoder>
    M& encoder_as() const { return as<M>(encoder.get(), "encoder"); }
    template <class M = TransformerDecoder>
    M& decoder_as() const { return as<M>(decoder.get(), "decoder"); }

    TransformerOptions options;
    std::shared_ptr<EncoderBase> encoder;  // a TransformerEncoder, or the custom_encoder
    std::shared_ptr<DecoderBase> decoder;  // a TransformerDecoder, or the custom_decoder

private:
    template <class M>
    static M& as(Module* m, const char* which) {
        if (auto* typed = dynamic_cast<M*>(m)) return *typed;
        wrong_type(which, *m, typeid(M).name());
    }
    [[noreturn]] static void wrong_type(const char* which, const Module& actual, const char* wanted_mangled);
};

}  // namespace xtgrad::nn::tutorial_d
