#include <xtgrad/nn/tutorial_a/encoder.hpp>

#include <xtgrad/nn/tutorial_a/masks.hpp>
#include <xtgrad/nn/tutorial_a/sequence_embedding.hpp>

namespace xtgrad::nn::tutorial_a {

Encoder::Encoder(const EncoderOptions& o) {
    encoder_layers = register_module("encoder_layers", std::make_shared<ModuleList<EncoderLayer>>());
    for (std::size_t i = 0; i < o.num_layers(); ++i)
        encoder_layers->push_back(std::make_shared<EncoderLayer>(o.layer<EncoderLayerOptions>()));
    seq_embedding = register_module(
        "seq_embedding", std::make_shared<Embedding>(EmbeddingOptions(o.vocab_size() + 1, o.model_dim()).padding_idx(0)));
    pos_embedding = register_module(
        "pos_embedding", std::make_shared<PositionalEncoding>(PositionalEncodingOptions(o.model_dim(), o.max_seq_len())));
}

// inputs (B, L), inputs_len (B) -> output (B, L, d), one attention map per layer
EncoderOutput Encoder::forward(const Ids& inputs, const Ids& inputs_len) const {
    auto scope = enter(inputs, inputs_len);
    EncoderOutput out;
    out.output = embed_sequence(*this, "Encoder", *seq_embedding, *pos_embedding, inputs, inputs_len);
    const Mask self_attention_mask = padding_mask(inputs, inputs);
    for (const auto& layer : *encoder_layers) {
        EncoderLayerOutput step = layer->forward(out.output, &self_attention_mask);
        out.output = step.output;
        out.attentions.push_back(step.attention);
    }
    return scope.output(out);
}

}  // namespace xtgrad::nn::tutorial_a
