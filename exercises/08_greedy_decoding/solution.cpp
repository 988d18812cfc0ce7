// Exercise 08, a reference solution: read it after trying.
#include "exercise.hpp"

using namespace xtgrad;

namespace ex08 {

std::vector<std::int64_t> teacher_forced(const nn::tutorial_c::Transformer& model, const Ids& enc_inputs,
                                         const Ids& dec_inputs) {
    NoGradGuard no_grad;
    const Ids best = argmax(model.forward(enc_inputs, dec_inputs).logits, -1);  // (Lt)
    return std::vector<std::int64_t>(best.begin(), best.end());
}

std::vector<std::int64_t> greedy(const nn::tutorial_c::Transformer& model, const Ids& enc_inputs, std::int64_t start_id,
                                 std::int64_t end_id, std::size_t max_words) {
    NoGradGuard no_grad;
    std::vector<std::int64_t> words{start_id};
    while (words.size() <= max_words) {
        Ids dec = Ids::from_shape({1, words.size()});
        std::copy(words.begin(), words.end(), dec.begin());
        const Ids best = argmax(model.forward(enc_inputs, dec).logits, -1);  // one word per position
        words.push_back(best(best.size() - 1));                              // the last position's: the next word
        if (words.back() == end_id) break;
    }
    return std::vector<std::int64_t>(words.begin() + 1, words.end());
}

}  // namespace ex08
