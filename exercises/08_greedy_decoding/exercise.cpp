// Exercise 08: write teacher forcing and greedy decoding, then run the grader:
//   ninja -C build exercises/exercises && build/exercises/exercises -ts=08_greedy_decoding
#include "exercise.hpp"

using namespace xtgrad;

namespace ex08 {

std::vector<std::int64_t> teacher_forced(const nn::tutorial_c::Transformer& model, const Ids& enc_inputs,
                                         const Ids& dec_inputs) {
    NoGradGuard no_grad;
    // TODO: model.forward(enc_inputs, dec_inputs).logits is (Lt, vocabulary): one row per
    // position. Return the argmax of each row (argmax(logits, -1)).
    (void)model, (void)enc_inputs, (void)dec_inputs;
    return {};
}

std::vector<std::int64_t> greedy(const nn::tutorial_c::Transformer& model, const Ids& enc_inputs, std::int64_t start_id,
                                 std::int64_t end_id, std::size_t max_words) {
    NoGradGuard no_grad;
    // TODO: keep the words so far, starting with start_id; each step runs the model on them as
    // a (1, t) decoder input and appends the argmax of the last row of the logits; stop after
    // end_id or max_words words.
    (void)model, (void)enc_inputs, (void)start_id, (void)end_id, (void)max_words;
    return {};
}

}  // namespace ex08
