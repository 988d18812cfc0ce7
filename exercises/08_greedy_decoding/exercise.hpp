// Exercise 08: teacher forcing and greedy decoding (docs/learn/08_winter_games.md).
#pragma once

#include <xtgrad/nn/tutorial_c/tutorial_c.hpp>
#include <xtgrad/xtgrad.hpp>

#include <cstdint>
#include <vector>

namespace ex08 {

// Teacher forcing, what tutorial C's test does: run the model once on the whole reference
// decoder input dec_inputs (1, Lt) ('S' then the reference words) and return the argmax word
// of every position (Lt words). Each position sees the reference words before it, never the
// model's own guesses.
std::vector<std::int64_t> teacher_forced(const xtgrad::nn::tutorial_c::Transformer& model, const xtgrad::Ids& enc_inputs,
                                         const xtgrad::Ids& dec_inputs);

// Greedy decoding, what translating means: start from [start_id], run the model on the words
// so far, append the argmax of the last position, and repeat until end_id is appended
// (returned with it) or max_words words are out. Returns the appended words (not start_id).
std::vector<std::int64_t> greedy(const xtgrad::nn::tutorial_c::Transformer& model, const xtgrad::Ids& enc_inputs,
                                 std::int64_t start_id, std::int64_t end_id, std::size_t max_words);

}  // namespace ex08
