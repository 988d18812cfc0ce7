#include <xtgrad/nn/tutorial_a/transformer.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/nn/tutorial_a/masks.hpp>

namespace xtgrad::nn::tutorial_a {

Transformer::Transformer(const TransformerOptions& o) {
    encoder = register_module("encoder", std::make_shared<Encoder>(o.stack<EncoderOptions>(o.src_vocab_size(), o.src_max_len())));
    decoder = register_module("decoder", std::make_shared<Decoder>(o.stack<DecoderOptions>(o.tgt_vocab_size(), o.tgt_max_len())));
    linear = register_module("linear",
                             std::make_shared<Linear>(LinearOptions(o.model_dim(), o.tgt_vocab_size()).bias(false)));
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
