#include "nn/tutorial_a/transformer.hpp"

#include "autograd/error.hpp"
#include "nn/tutorial_a/masks.hpp"

namespace xtgrad::nn::tutorial_a {

Transformer::Transformer(std::size_t src_vocab_size, std::size_t src_max_len, std::size_t tgt_vocab_size,
                         std::size_t tgt_max_len, std::size_t num_layers, std::size_t model_dim, std::size_t num_heads,
                         std::size_t ffn_dim, float dropout, const Options& options) {
    encoder = register_module("encoder", std::make_shared<Encoder>(src_vocab_size, src_max_len, num_layers, model_dim,
                                                                   num_heads, ffn_dim, dropout, options));
    decoder = register_module("decoder", std::make_shared<Decoder>(tgt_vocab_size, tgt_max_len, num_layers, model_dim,
                                                                   num_heads, ffn_dim, dropout, options));
    linear = register_module("linear", std::make_shared<Linear>(model_dim, tgt_vocab_size, /*bias=*/false));
}

// src_seq (B, Ls), tgt_seq (B, Lt) -> logits (B, Lt, tgt_vocab_size) and every attention map
TransformerOutput Transformer::forward(const Ids& src_seq, const Ids& src_len, const Ids& tgt_seq,
                                       const Ids& tgt_len) const {
    auto scope = enter(src_seq, src_len, tgt_seq, tgt_len);
    if (src_seq.dimension() != 2 || tgt_seq.dimension() != 2 || src_seq.shape(0) != tgt_seq.shape(0))
        module_error(*this, "Transformer",
                     fmt::format("src_seq {} and tgt_seq {} must be (batch, len) ids with one batch size",
                                 shape_str(src_seq.shape()), shape_str(tgt_seq.shape())));
    const Mask context_attn_mask = padding_mask(src_seq, tgt_seq);  // keys = source; the notebook swaps them
    EncoderOutput enc = encoder->forward(src_seq, src_len);
    DecoderOutput dec = decoder->forward(tgt_seq, tgt_len, enc.output, &context_attn_mask);
    return scope.output(
        TransformerOutput{linear->forward(dec.output), enc.attentions, dec.self_attentions, dec.context_attentions});
}

Tensor Transformer::probabilities(const Tensor& logits) { return softmax(logits, 2); }

Tensor Transformer::predict(const Ids& src_seq, const Ids& src_len, const Ids& tgt_seq, const Ids& tgt_len) const {
    NoGradGuard no_grad;
    return probabilities(forward(src_seq, src_len, tgt_seq, tgt_len).logits);
}

}  // namespace xtgrad::nn::tutorial_a
