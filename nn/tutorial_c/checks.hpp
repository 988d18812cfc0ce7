// Input checks shared by tutorial C's Encoder and Decoder; each throws xtgrad::Error naming
// the module type, its path and the shapes involved.
#pragma once

#include <xtgrad/nn/module.hpp>

namespace xtgrad::nn::tutorial_c::check {

// ids must be (batch, len) with len <= max_len (the rows of the position table) and every id
// in [0, vocab_size).
// The embedding size of a stack's options: positive (the sinusoid table needs a column).
void d_model_positive(const char* type, std::size_t d_model);

void token_ids(const Module& m, const char* type, const char* what, const Ids& ids, std::size_t vocab_size,
               std::size_t max_len);

}  // namespace xtgrad::nn::tutorial_c::check
