// Tutorial B, "PositionalEncoding": class PositionalEncoding(d_model, max_seq_length).
//
// A registered buffer pe (1, max_seq_length, d_model), built in float32 as the tutorial:
//   div_term[i]  = exp(2i · -(ln 10000 / d_model))          i = 0 .. d/2 - 1
//   pe[0, p, 2i]   = sin(p · div_term[i])
//   pe[0, p, 2i+1] = cos(p · div_term[i])                    p = 0 .. max_seq_length - 1
// forward adds it: x + pe[:, :L]. Row p is position p, starting at 0; there is no PAD row
// (compare A and C, docs/tutorial_b.md). The buffer is saved in the state_dict as
// `pe` and never trained.
//
// exp(2i · -ln(10000)/d) is 1 / 10000^(2i/d), the paper's frequency, written so every
// value stays in float32. It needs an even d_model: the tutorial's pe[:, 1::2] assignment
// fails for an odd one, and xtgrad says so at construction.
#pragma once

#include <xtgrad/nn/module.hpp>
#include <xtgrad/nn/options.hpp>

namespace xtgrad::nn::tutorial_b {

// PositionalEncodingOptions(512, 100)
class PositionalEncodingOptions {
public:
    PositionalEncodingOptions(std::size_t d_model, std::size_t max_seq_length)
        : d_model_(d_model), max_seq_length_(max_seq_length) {}
    XTGRAD_ARG(std::size_t, d_model);
    XTGRAD_ARG(std::size_t, max_seq_length);
};

class PositionalEncoding : public Module {
public:
    XTGRAD_OPTIONS_CONSTRUCTORS(PositionalEncoding);
    Tensor forward(const Tensor& x) const;  // x (B, L, d), L <= max_seq_length -> x + pe[:, :L]

    Tensor pe;  // buffer (1, max_seq_length, d_model)
};

}  // namespace xtgrad::nn::tutorial_b
