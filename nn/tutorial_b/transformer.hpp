// Tutorial B, "Transformer": class Transformer(src_vocab_size, tgt_vocab_size, d_model,
// num_heads, num_layers, d_ff, max_seq_length, dropout).
//
//   src_mask, tgt_mask = generate_mask(src, tgt)                       (masks.hpp)
//   enc = dropout(positional_encoding(encoder_embedding(src)))         (B, Ls, d)
//   dec = dropout(positional_encoding(decoder_embedding(tgt)))         (B, Lt, d)
//   enc = encoder_layers[i](enc, src_mask)              for each layer
//   dec = decoder_layers[i](dec, enc, src_mask, tgt_mask)  for each layer
//   logits = fc(dec)                                                   (B, Lt, tgt_vocab_size)
//
// State (torch's names): encoder_embedding.weight, decoder_embedding.weight (no
// padding_idx: PAD's row trains like any other), positional_encoding.pe (one buffer for both
// sides), encoder_layers.{i}.*, decoder_layers.{i}.*, fc.weight, fc.bias.
// The output is logits: train with cross_entropy(logits, target, ignore_index=0), as the
// tutorial's CrossEntropyLoss(ignore_index=0) does.
//
// encode() and decode() are the two halves of forward, for callers that reuse the encoder
// output (greedy decoding).
#pragma once

#include <xtgrad/nn/layers.hpp>
#include <xtgrad/nn/module.hpp>
#include <xtgrad/nn/options.hpp>
#include <xtgrad/nn/tutorial_b/decoder_layer.hpp>
#include <xtgrad/nn/tutorial_b/encoder_layer.hpp>
#include <xtgrad/nn/tutorial_b/masks.hpp>
#include <xtgrad/nn/tutorial_b/positional_encoding.hpp>

#include <memory>

namespace xtgrad::nn::tutorial_b {

// TransformerOptions(5000, 5000).num_layers(2).dropout(0.f); the defaults are the tutorial's run.
class TransformerOptions {
public:
    TransformerOptions(std::size_t src_vocab_size, std::size_t tgt_vocab_size)
        : src_vocab_size_(src_vocab_size), tgt_vocab_size_(tgt_vocab_size) {}
    XTGRAD_ARG(std::size_t, src_vocab_size);
    XTGRAD_ARG(std::size_t, tgt_vocab_size);
    XTGRAD_ARG(std::size_t, d_model) = 512;
    XTGRAD_ARG(std::size_t, num_heads) = 8;
    XTGRAD_ARG(std::size_t, num_layers) = 6;
    XTGRAD_ARG(std::size_t, d_ff) = 2048;
    XTGRAD_ARG(std::size_t, max_seq_length) = 100;
    XTGRAD_ARG(float, dropout) = 0.1f;
};

class Transformer : public Module {
public:
    explicit Transformer(const TransformerOptions& options);
    // The tutorial's Transformer(src_vocab_size, tgt_vocab_size, d_model, num_heads, num_layers, d_ff,
    // max_seq_length, dropout).
    Transformer(std::size_t src_vocab_size, std::size_t tgt_vocab_size, std::size_t d_model, std::size_t num_heads,
                std::size_t num_layers, std::size_t d_ff, std::size_t max_seq_length, float dropout)
        : Transformer(TransformerOptions(src_vocab_size, tgt_vocab_size)
                          .d_model(d_model)
                          .num_heads(num_heads)
                          .num_layers(num_layers)
                          .d_ff(d_ff)
                          .max_seq_length(max_seq_length)
                          .dropout(dropout)) {}

    // src (B, Ls), tgt (B, Lt) ids, 0 = PAD -> logits (B, Lt, tgt_vocab_size).
    Tensor forward(const Ids& src, const Ids& tgt) const;

    // The tutorial's method; the same as the free function generate_mask.
    static Masks generate_mask(const Ids& src, const Ids& tgt) { return tutorial_b::generate_mask(src, tgt); }

    Tensor encode(const Ids& src, const Mask& src_mask) const;  // -> enc_output (B, Ls, d)
    // -> logits (B, Lt, V)
    Tensor decode(const Ids& tgt, const Tensor& enc_output, const Mask& src_mask, const Mask& tgt_mask) const;

    std::shared_ptr<Embedding> encoder_embedding, decoder_embedding;
    std::shared_ptr<PositionalEncoding> positional_encoding;
    std::shared_ptr<ModuleList<EncoderLayer>> encoder_layers;
    std::shared_ptr<ModuleList<DecoderLayer>> decoder_layers;
    std::shared_ptr<Linear> fc;
    std::shared_ptr<Dropout> dropout;

private:
    void check_ids(const char* which, const Ids& ids, std::size_t vocab_size) const;
    Tensor embed(const Embedding& embedding, const Ids& ids) const;
    Tensor run_encoder(Tensor embedded, const Mask& src_mask) const;
    Tensor run_decoder(Tensor embedded, const Tensor& enc_output, const Mask& src_mask, const Mask& tgt_mask) const;
};

// Teacher forcing as tutorial B trains: the decoder reads tgt[:, :-1] and the loss compares its
// logits with tgt[:, 1:], flattened for cross_entropy. tgt (B, L) -> input (B, L-1), target (B·(L-1)).
struct ShiftedTargets {
    Ids input, target;
};
ShiftedTargets shift_targets(const Ids& tgt);

}  // namespace xtgrad::nn::tutorial_b
