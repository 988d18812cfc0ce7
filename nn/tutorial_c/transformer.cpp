#include <xtgrad/nn/tutorial_c/transformer.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/grad_mode.hpp>
#include <xtgrad/autograd/ops.hpp>

#include <algorithm>

namespace xtgrad::nn::tutorial_c {

namespace {
constexpr const char* kTransformerType = "tutorial_c::Transformer";
}

Transformer::Transformer(const Config& o) : options(o) {
    encoder = register_module("encoder", std::make_shared<Encoder>(o));
    decoder = register_module("decoder", std::make_shared<Decoder>(o));
    projection = register_module("projection", std::make_shared<Linear>(o.d_model(), o.tgt_vocab_size(), /*bias=*/false));
}

TransformerOutput Transformer::forward(const Ids& enc_inputs, const Ids& dec_inputs) const {
    auto scope = enter(enc_inputs, dec_inputs);
    auto [enc_outputs, enc_self_attns] = encoder->forward(enc_inputs);
    auto [dec_outputs, dec_self_attns, dec_enc_attns] = decoder->forward(dec_inputs, enc_inputs, enc_outputs);
    const Tensor dec_logits = projection->forward(dec_outputs);  // (B, Lt, V)
    const long V = static_cast<long>(options.tgt_vocab_size());
    return scope.output(TransformerOutput{reshape(dec_logits, {-1, V}), std::move(enc_self_attns),
                                          std::move(dec_self_attns), std::move(dec_enc_attns)});
}

Ids Transformer::greedy_decode(const Ids& enc_inputs, std::int64_t start_id, std::int64_t end_id,
                               std::size_t max_new_tokens) const {
    auto scope = path_scope();
    NoGradGuard no_grad;
    const auto vocab = static_cast<std::int64_t>(options.tgt_vocab_size());
    if (start_id < 0 || start_id >= vocab || end_id < 0 || end_id >= vocab)
        module_error(*this, kTransformerType,
                     fmt::format("greedy_decode: start_id {} and end_id {} must be ids of the target vocabulary of {}",
                                 start_id, end_id, vocab));
    if (max_new_tokens == 0) max_new_tokens = options.tgt_len();
    if (max_new_tokens > options.tgt_len())
        module_error(*this, kTransformerType,
                     fmt::format("greedy_decode: max_new_tokens {} exceeds tgt_len {}, the longest decoder input",
                                 max_new_tokens, options.tgt_len()));
    const EncoderOutput enc = encoder->forward(enc_inputs);
    const std::size_t B = enc_inputs.shape(0);

    Ids dec_inputs = Ids::from_shape({B, 1});  // grows by one column per step
    dec_inputs.fill(start_id);
    std::vector<bool> done(B, false);
    for (std::size_t t = 1; t <= max_new_tokens; ++t) {
        const Tensor dec_outputs = decoder->forward(dec_inputs, enc_inputs, enc.enc_outputs).dec_outputs;
        const Tensor last = slice(dec_outputs, 1, static_cast<long>(t - 1), static_cast<long>(t));  // (B, 1, d)
        const Ids next = argmax(projection->forward(last), -1);                                    // (B, 1)
        Ids longer = Ids::from_shape({B, t + 1});
        for (std::size_t b = 0; b < B; ++b) {
            for (std::size_t j = 0; j < t; ++j) longer(b, j) = dec_inputs(b, j);
            longer(b, t) = done[b] ? 0 : next(b, 0);
            done[b] = done[b] || next(b, 0) == end_id;
        }
        dec_inputs = std::move(longer);
        if (std::all_of(done.begin(), done.end(), [](bool d) { return d; })) break;
    }
    // drop the start column
    const std::size_t n = dec_inputs.shape(1) - 1;
    Ids words = Ids::from_shape({B, n});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t j = 0; j < n; ++j) words(b, j) = dec_inputs(b, j + 1);
    return words;
}

}  // namespace xtgrad::nn::tutorial_c
