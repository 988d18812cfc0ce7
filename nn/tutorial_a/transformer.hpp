// Tutorial A, "Transformer的实现": class Transformer.
//
//   context_attn_mask = padding_mask(src_seq, tgt_seq)                  (B, Lt, Ls)
//   memory, enc_self_attn = encoder(src_seq, src_len)
//   output, dec_self_attn, ctx_attn = decoder(tgt_seq, tgt_len, memory, context_attn_mask)
//   logits = linear(output)                                             (B, Lt, tgt_vocab_size), no bias
//
// Errata:
//  * the notebook builds the context mask as padding_mask(tgt_seq, src_seq). padding_mask
//    takes the *keys* first, and in context attention the keys are the source, so that mask
//    is (B, Ls, Lt) and hides target PADs instead of source PADs. xtgrad: padding_mask(src_seq, tgt_seq).
//  * the notebook ends in nn.Softmax(dim=2) and returns probabilities. Training them with
//    CrossEntropyLoss, which applies log-softmax itself, would apply softmax twice (the loss
//    then barely moves). forward returns the logits; probabilities() / predict() give the
//    notebook's softmax for inference.
// As in the notebook, the embeddings have vocab_size + 1 rows (PAD is extra) while linear
// has tgt_vocab_size outputs; the notebook's default dropout is 0.2.
#pragma once

#include <xtgrad/nn/layers.hpp>
#include <xtgrad/nn/tutorial_a/decoder.hpp>
#include <xtgrad/nn/tutorial_a/encoder.hpp>

#include <memory>
#include <vector>

namespace xtgrad::nn::tutorial_a {

struct TransformerOutput {
    Tensor logits;                         // (B, Lt, tgt_vocab_size)
    std::vector<Tensor> enc_self_attn;     // per layer (B·h, Ls, Ls)
    std::vector<Tensor> dec_self_attn;     // per layer (B·h, Lt, Lt)
    std::vector<Tensor> ctx_attn;          // per layer (B·h, Lt, Ls)
};

// TransformerOptions(src_vocab_size, src_max_len, tgt_vocab_size, tgt_max_len).num_layers(2).dropout(0.f)
class TransformerOptions {
public:
    TransformerOptions(std::size_t src_vocab_size, std::size_t src_max_len, std::size_t tgt_vocab_size,
                       std::size_t tgt_max_len)
        : src_vocab_size_(src_vocab_size), src_max_len_(src_max_len), tgt_vocab_size_(tgt_vocab_size), tgt_max_len_(tgt_max_len) {}
    XTGRAD_ARG(std::size_t, src_vocab_size);
    XTGRAD_ARG(std::size_t, src_max_len);
    XTGRAD_ARG(std::size_t, tgt_vocab_size);
    XTGRAD_ARG(std::size_t, tgt_max_len);
    XTGRAD_TUTORIAL_A_SIZE_ARGS;
    XTGRAD_ARG(float, dropout) = 0.2f;
    XTGRAD_TUTORIAL_A_ERRATA_ARGS;

public:
    // The two stacks' options: StackOptions is EncoderOptions or DecoderOptions.
    template <class StackOptions>
    StackOptions stack(std::size_t vocab_size, std::size_t max_seq_len) const {
        return with_sizes(StackOptions(vocab_size, max_seq_len), num_layers_, model_dim_, num_heads_, ffn_dim_, dropout_,
                          errata());
    }
};

class Transformer : public Module {
public:
    explicit Transformer(const TransformerOptions& o);
    Transformer(std::size_t src_vocab_size, std::size_t src_max_len, std::size_t tgt_vocab_size, std::size_t tgt_max_len,
                std::size_t num_layers = 6, std::size_t model_dim = 512, std::size_t num_heads = 8,
                std::size_t ffn_dim = 2048, float dropout = 0.2f, const Errata& options = {})
        : Transformer(with_sizes(TransformerOptions(src_vocab_size, src_max_len, tgt_vocab_size, tgt_max_len), num_layers,
                                 model_dim, num_heads, ffn_dim, dropout, options)) {}

    // src_seq (B, Ls), src_len (B), tgt_seq (B, Lt), tgt_len (B): ids with trailing 0 = PAD.
    TransformerOutput forward(const Ids& src_seq, const Ids& src_len, const Ids& tgt_seq, const Ids& tgt_len) const;

    // The notebook's final Softmax(dim=2): logits (B, Lt, V) -> probabilities over the vocabulary.
    static Tensor probabilities(const Tensor& logits);
    // Inference: forward without recording the graph, then probabilities. (Call eval() first
    // to switch dropout off.)
    Tensor predict(const Ids& src_seq, const Ids& src_len, const Ids& tgt_seq, const Ids& tgt_len) const;

    std::shared_ptr<Encoder> encoder;
    std::shared_ptr<Decoder> decoder;
    std::shared_ptr<Linear> linear;
};

}  // namespace xtgrad::nn::tutorial_a
