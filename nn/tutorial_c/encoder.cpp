#include <xtgrad/nn/tutorial_c/encoder.hpp>

#include <xtgrad/nn/tutorial_c/checks.hpp>
#include <xtgrad/nn/tutorial_c/masks.hpp>
#include <xtgrad/nn/tutorial_c/sinusoid_table.hpp>

namespace xtgrad::nn::tutorial_c {

Encoder::Encoder(const Config& o) : options(o) {
    check::d_model_positive("tutorial_c::Encoder", o.d_model());
    token_emb = register_module("token_emb", std::make_shared<Embedding>(o.src_vocab_size(), o.d_model()));
    pos_emb = register_module(
        "pos_emb", Embedding::from_pretrained(get_sinusoid_encoding_table(o.src_len() + 1, o.d_model()), /*freeze=*/true));
    layers = register_module("layers", std::make_shared<ModuleList<EncoderLayer>>());
    for (std::size_t i = 0; i < o.n_layers(); ++i)
        layers->push_back(std::make_shared<EncoderLayer>(o.encoder_layer()));
}

EncoderOutput Encoder::forward(const Ids& enc_inputs) const {
    auto scope = enter(enc_inputs);
    check::token_ids(*this, "tutorial_c::Encoder", "enc_inputs", enc_inputs, options.src_vocab_size(), options.src_len());
    // (B, Ls) -> (B, Ls, d)
    EncoderOutput out;
    out.enc_outputs = token_emb->forward(enc_inputs) +
                      pos_emb->forward(positions(enc_inputs, options.positions(), Side::encoder));
    const Mask enc_self_attn_mask = get_attn_pad_mask(enc_inputs, enc_inputs);  // (B, Ls, Ls)
    for (const auto& layer : *layers) {
        auto [enc_outputs, attn] = layer->forward(out.enc_outputs, enc_self_attn_mask);
        out.enc_outputs = enc_outputs;
        out.enc_self_attns.push_back(attn);
    }
    return scope.output(out);
}

}  // namespace xtgrad::nn::tutorial_c
