// Tutorial A, "Position encoding的实现": class PositionalEncoding.
//
// A frozen lookup table of max_seq_len + 1 rows:
//   row 0      all zeros: the encoding of PAD
//   row p ≥ 1  the sinusoid of position p - 1:  [sin a₀, cos a₀, sin a₁, cos a₁, …],
//              a_i = (p - 1) / 10000^(2i / d_model)   (computed in double, stored as float)
// forward(input_len) looks it up with positions 1..len followed by 0 for each sequence, so
// real tokens get rows 1..len and padding gets the zero row.
//
// The notebook's code does not run: it calls np.pow (numpy has np.power) and concatenates
// a numpy array to a torch tensor. xtgrad builds the table it meant. Since the sinusoid rows
// start at position 0, the first real token gets sin/cos(0) = [0, 1, 0, 1, …].
#pragma once

#include <xtgrad/nn/layers.hpp>
#include <xtgrad/nn/options.hpp>

#include <memory>

namespace xtgrad::nn::tutorial_a {

// PositionalEncodingOptions(512, max_seq_len)
class PositionalEncodingOptions {
public:
    PositionalEncodingOptions(std::size_t d_model, std::size_t max_seq_len) : d_model_(d_model), max_seq_len_(max_seq_len) {}
    XTGRAD_ARG(std::size_t, d_model);      // the width of each encoding row
    XTGRAD_ARG(std::size_t, max_seq_len);  // the longest input_len forward accepts (the table has one row more)
};

class PositionalEncoding : public Module {
public:
    XTGRAD_OPTIONS_CONSTRUCTORS(PositionalEncoding);

    // input_len (B) or (B, 1), each ≤ max_seq_len -> (B, max(input_len), d_model)
    Tensor forward(const Ids& input_len) const;

    // The indices forward looks up: (B, max(input_len)), row b = 1..len_b then 0.
    Ids positions(const Ids& input_len) const;

    // The table: (max_seq_len + 1, d_model), row 0 zeros (PAD), row p the sinusoid of p - 1.
    static Array sinusoid_table(std::size_t d_model, std::size_t max_seq_len);

    std::shared_ptr<Embedding> position_encoding;  // frozen: weight never trains
    std::size_t max_seq_len;
};

}  // namespace xtgrad::nn::tutorial_a
