// Tutorial A, "Encoder的实现": class Encoder.
//
//   output = seq_embedding(inputs) + pos_embedding(inputs_len)      (B, L, d)
//   mask   = padding_mask(inputs, inputs)                           (B, L, L)
//   output, attention_i = encoder_layers[i](output, mask)           for each layer
//
// seq_embedding is Embedding(vocab_size + 1, d, padding_idx=0): ids 1..vocab_size are words,
// 0 is PAD, whose row starts at zero and never trains. pos_embedding is the frozen table of
// PositionalEncoding.
#pragma once

#include <xtgrad/nn/layers.hpp>
#include <xtgrad/nn/tutorial_a/encoder_layer.hpp>
#include <xtgrad/nn/tutorial_a/positional_encoding.hpp>

#include <memory>
#include <vector>

namespace xtgrad::nn::tutorial_a {

struct EncoderOutput {
    Tensor output;                    // (B, L, d)
    std::vector<Tensor> attentions;   // one (B·h, L, L) per layer
};

class Encoder : public Module {
public:
    explicit Encoder(const EncoderOptions& o);
    Encoder(std::size_t vocab_size, std::size_t max_seq_len, std::size_t num_layers = 6, std::size_t model_dim = 512,
            std::size_t num_heads = 8, std::size_t ffn_dim = 2048, float dropout = 0.f, const Errata& options = {})
        : Encoder(with_sizes(EncoderOptions(vocab_size, max_seq_len), num_layers, model_dim, num_heads, ffn_dim, dropout, options)) {}

    // inputs (B, L) ids (0 = PAD, trailing), inputs_len (B) with max(inputs_len) = L.
    EncoderOutput forward(const Ids& inputs, const Ids& inputs_len) const;

    std::shared_ptr<ModuleList<EncoderLayer>> encoder_layers;
    std::shared_ptr<Embedding> seq_embedding;
    std::shared_ptr<PositionalEncoding> pos_embedding;
};

}  // namespace xtgrad::nn::tutorial_a
