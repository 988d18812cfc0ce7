#include <xtgrad/nn/tutorial_b/transformer.hpp>

#include <xtgrad/autograd/error.hpp>

namespace xtgrad::nn::tutorial_b {

namespace {
constexpr const char* kTransformerType = "tutorial_b::Transformer";
}

Transformer::Transformer(const TransformerOptions& o) {
    const std::size_t src_vocab_size = o.src_vocab_size(), tgt_vocab_size = o.tgt_vocab_size(), d_model = o.d_model(),
                      num_heads = o.num_heads(), num_layers = o.num_layers(), d_ff = o.d_ff(),
                      max_seq_length = o.max_seq_length();
    const float p = o.dropout();
    encoder_embedding = register_module("encoder_embedding", std::make_shared<Embedding>(src_vocab_size, d_model));
    decoder_embedding = register_module("decoder_embedding", std::make_shared<Embedding>(tgt_vocab_size, d_model));
    positional_encoding =
        register_module("positional_encoding", std::make_shared<PositionalEncoding>(d_model, max_seq_length));
    encoder_layers = register_module("encoder_layers", std::make_shared<ModuleList<EncoderLayer>>());
    decoder_layers = register_module("decoder_layers", std::make_shared<ModuleList<DecoderLayer>>());
    // All encoder layers, then all decoder layers: torch's order of drawing their weights.
    for (std::size_t i = 0; i < num_layers; ++i)
        encoder_layers->push_back(std::make_shared<EncoderLayer>(d_model, num_heads, d_ff, p));
    for (std::size_t i = 0; i < num_layers; ++i)
        decoder_layers->push_back(std::make_shared<DecoderLayer>(d_model, num_heads, d_ff, p));
    fc = register_module("fc", std::make_shared<Linear>(d_model, tgt_vocab_size));
    dropout = register_module("dropout", std::make_shared<Dropout>(p));
}

void Transformer::check_ids(const char* which, const Ids& ids, std::size_t vocab_size) const {
    if (ids.dimension() != 2)
        module_error(*this, kTransformerType, fmt::format("{} must be (batch, len) ids, got {}", which, shape_str(ids.shape())));
    for (std::size_t i = 0; i < ids.size(); ++i)
        if (ids.data()[i] < 0 || ids.data()[i] >= static_cast<std::int64_t>(vocab_size))
            module_error(*this, kTransformerType,
                         fmt::format("{} {} holds id {} at ({}, {}), outside its vocabulary of {} ids", which,
                                     shape_str(ids.shape()), ids.data()[i], i / ids.shape(1), i % ids.shape(1),
                                     vocab_size));
}

Tensor Transformer::forward(const Ids& src, const Ids& tgt) const {
    auto scope = enter(src, tgt);
    check_ids("src", src, encoder_embedding->weight.size(0));
    check_ids("tgt", tgt, decoder_embedding->weight.size(0));
    if (src.shape(0) != tgt.shape(0))
        module_error(*this, kTransformerType,
                     fmt::format("src {} and tgt {} differ in batch size", shape_str(src.shape()), shape_str(tgt.shape())));
    const auto [src_mask, tgt_mask] = generate_mask(src, tgt);
    // The tutorial's order of dropout draws: both embeddings, then the encoder, then the decoder.
    Tensor src_embedded = embed(*encoder_embedding, src);
    Tensor tgt_embedded = embed(*decoder_embedding, tgt);
    return scope.output(run_decoder(std::move(tgt_embedded), run_encoder(std::move(src_embedded), src_mask), src_mask, tgt_mask));
}

Tensor Transformer::encode(const Ids& src, const Mask& src_mask) const {
    auto scope = path_scope();
    return run_encoder(embed(*encoder_embedding, src), src_mask);
}

Tensor Transformer::decode(const Ids& tgt, const Tensor& enc_output, const Mask& src_mask,
                           const Mask& tgt_mask) const {
    auto scope = path_scope();
    return run_decoder(embed(*decoder_embedding, tgt), enc_output, src_mask, tgt_mask);
}

// ids (B, L) -> dropout(positional_encoding(embedding(ids))) (B, L, d)
Tensor Transformer::embed(const Embedding& embedding, const Ids& ids) const {
    return dropout->forward(positional_encoding->forward(embedding.forward(ids)));
}

Tensor Transformer::run_encoder(Tensor x, const Mask& src_mask) const {
    for (const auto& layer : *encoder_layers) x = layer->forward(x, src_mask);
    return x;  // (B, Ls, d)
}

Tensor Transformer::run_decoder(Tensor x, const Tensor& enc_output, const Mask& src_mask, const Mask& tgt_mask) const {
    for (const auto& layer : *decoder_layers) x = layer->forward(x, enc_output, src_mask, tgt_mask);
    return fc->forward(x);  // (B, Lt, tgt_vocab_size)
}

ShiftedTargets shift_targets(const Ids& tgt) {
    if (tgt.dimension() != 2 || tgt.shape(1) < 2)
        fail("tutorial_b::shift_targets: tgt must be (batch, len >= 2) token ids, got {}", shape_str(tgt.shape()));
    const std::size_t B = tgt.shape(0), L = tgt.shape(1);
    ShiftedTargets s{Ids::from_shape({B, L - 1}), Ids::from_shape({B * (L - 1)})};
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t + 1 < L; ++t) {
            s.input(b, t) = tgt(b, t);                  // tgt[:, :-1]
            s.target(b * (L - 1) + t) = tgt(b, t + 1);  // tgt[:, 1:], flattened
        }
    return s;
}

}  // namespace xtgrad::nn::tutorial_b
