// Tutorial A, "Decoder的实现": class Decoder.
//
//   output    = seq_embedding(inputs) + pos_embedding(inputs_len)        (B, Lt, d)
//   self mask = gt(padding_mask(inputs, inputs) + sequence_mask(inputs), 0)   PAD or future keys
//   output, self_i, context_i = decoder_layers[i](output, enc_output, self mask, context_attn_mask)
//
// The context mask comes from the caller (the Transformer builds padding_mask(src, tgt)).
#pragma once

#include <xtgrad/nn/layers.hpp>
#include <xtgrad/nn/tutorial_a/decoder_layer.hpp>
#include <xtgrad/nn/tutorial_a/positional_encoding.hpp>

#include <memory>
#include <vector>

namespace xtgrad::nn::tutorial_a {

struct DecoderOutput {
    Tensor output;                            // (B, Lt, d)
    std::vector<Tensor> self_attentions;      // one (B·h, Lt, Lt) per layer
    std::vector<Tensor> context_attentions;   // one (B·h, Lt, Ls) per layer
};

class Decoder : public Module {
public:
    explicit Decoder(const DecoderOptions& o);
    Decoder(std::size_t vocab_size, std::size_t max_seq_len, std::size_t num_layers = 6, std::size_t model_dim = 512,
            std::size_t num_heads = 8, std::size_t ffn_dim = 2048, float dropout = 0.f, const Errata& options = {})
        : Decoder(with_sizes(DecoderOptions(vocab_size, max_seq_len), num_layers, model_dim, num_heads, ffn_dim, dropout, options)) {}

    // inputs (B, Lt) ids, inputs_len (B), enc_output (B, Ls, d), context_attn_mask (B, Lt, Ls) or null.
    DecoderOutput forward(const Ids& inputs, const Ids& inputs_len, const Tensor& enc_output,
                          const Mask* context_attn_mask = nullptr) const;

    std::size_t num_layers;
    std::shared_ptr<ModuleList<DecoderLayer>> decoder_layers;
    std::shared_ptr<Embedding> seq_embedding;
    std::shared_ptr<PositionalEncoding> pos_embedding;
};

}  // namespace xtgrad::nn::tutorial_a
