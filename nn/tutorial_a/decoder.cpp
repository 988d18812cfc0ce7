#include <xtgrad/nn/tutorial_a/decoder.hpp>

#include <xtgrad/nn/tutorial_a/masks.hpp>
#include <xtgrad/nn/tutorial_a/sequence_embedding.hpp>

namespace xtgrad::nn::tutorial_a {

Decoder::Decoder(const DecoderOptions& o) : num_layers(o.num_layers()) {
    decoder_layers = register_module("decoder_layers", std::make_shared<ModuleList<DecoderLayer>>());
    for (std::size_t i = 0; i < num_layers; ++i)
        decoder_layers->push_back(std::make_shared<DecoderLayer>(o.layer<DecoderLayerOptions>()));
    seq_embedding = register_module(
        "seq_embedding", std::make_shared<Embedding>(EmbeddingOptions(o.vocab_size() + 1, o.model_dim()).padding_idx(0)));
    pos_embedding = register_module(
        "pos_embedding", std::make_shared<PositionalEncoding>(PositionalEncodingOptions(o.model_dim(), o.max_seq_len())));
}

// inputs (B, Lt), inputs_len (B), enc_output (B, Ls, d) -> output (B, Lt, d) and the attention maps
DecoderOutput Decoder::forward(const Ids& inputs, const Ids& inputs_len, const Tensor& enc_output,
                               const Mask* context_attn_mask) const {
    auto scope = enter(inputs, inputs_len, enc_output, context_attn_mask);
    DecoderOutput out;
    out.output = embed_sequence(*this, "Decoder", *seq_embedding, *pos_embedding, inputs, inputs_len);
    const Mask self_attn_mask = decoder_self_mask(inputs);
    for (const auto& layer : *decoder_layers) {
        DecoderLayerOutput step = layer->forward(out.output, enc_output, &self_attn_mask, context_attn_mask);
        out.output = step.output;
        out.self_attentions.push_back(step.self_attention);
        out.context_attentions.push_back(step.context_attention);
    }
    return scope.output(out);
}

}  // namespace xtgrad::nn::tutorial_a
