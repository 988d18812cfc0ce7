#include <xtgrad/nn/tutorial_c/decoder.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/nn/tutorial_c/checks.hpp>
#include <xtgrad/nn/tutorial_c/masks.hpp>
#include <xtgrad/nn/tutorial_c/sinusoid_table.hpp>

namespace xtgrad::nn::tutorial_c {

namespace {
constexpr const char* kDecoderType = "tutorial_c::Decoder";
}

Decoder::Decoder(const Config& o) : options(o) {
    check::d_model_positive(kDecoderType, o.d_model());
    output_token_emb = register_module("output_token_emb", std::make_shared<Embedding>(o.tgt_vocab_size(), o.d_model()));
    pos_emb = register_module(
        "pos_emb", Embedding::from_pretrained(get_sinusoid_encoding_table(o.tgt_len() + 1, o.d_model()), /*freeze=*/true));
    layers = register_module("layers", std::make_shared<ModuleList<DecoderLayer>>());
    for (std::size_t i = 0; i < o.n_layers(); ++i)
        layers->push_back(std::make_shared<DecoderLayer>(o.decoder_layer()));
}

DecoderOutput Decoder::forward(const Ids& dec_inputs, const Ids& enc_inputs, const Tensor& enc_outputs) const {
    auto scope = enter(dec_inputs, enc_inputs, enc_outputs);
    check::token_ids(*this, kDecoderType, "dec_inputs", dec_inputs, options.tgt_vocab_size(), options.tgt_len());
    if (enc_inputs.dimension() != 2 || enc_inputs.shape(0) != dec_inputs.shape(0) || enc_outputs.dim() != 3 ||
        enc_outputs.size(0) != enc_inputs.shape(0) || enc_outputs.size(1) != enc_inputs.shape(1))
        module_error(*this, kDecoderType,
                     fmt::format("expected enc_inputs (B, Ls) and enc_outputs (B, Ls, d) with the batch B of dec_inputs "
                                 "{}, got enc_inputs {} and enc_outputs {}",
                                 shape_str(dec_inputs.shape()), shape_str(enc_inputs.shape()),
                                 shape_str(enc_outputs.shape())));
    // (B, Lt) -> (B, Lt, d)
    DecoderOutput out;
    out.dec_outputs = output_token_emb->forward(dec_inputs) +
                      pos_emb->forward(positions(dec_inputs, options.positions(), Side::decoder));
    const Mask dec_self_attn_mask = get_dec_self_attn_mask(dec_inputs);            // (B, Lt, Lt)
    const Mask dec_enc_attn_mask = get_attn_pad_mask(dec_inputs, enc_inputs);      // (B, Lt, Ls)
    for (const auto& layer : *layers) {
        auto [dec_outputs, dec_self_attn, dec_enc_attn] =
            layer->forward(out.dec_outputs, enc_outputs, dec_self_attn_mask, dec_enc_attn_mask);
        out.dec_outputs = dec_outputs;
        out.dec_self_attns.push_back(dec_self_attn);
        out.dec_enc_attns.push_back(dec_enc_attn);
    }
    return scope.output(out);
}

}  // namespace xtgrad::nn::tutorial_c
