// The options of tutorial B's EncoderLayer and DecoderLayer, e.g.
// EncoderLayerOptions(512, 8, 2048).dropout(0.1f); Tag makes the two option types distinct.
#pragma once

#include <xtgrad/nn/options.hpp>

#include <cstddef>

namespace xtgrad::nn::tutorial_b {

template <class Tag>
class LayerOptionsOf {
public:
    LayerOptionsOf(std::size_t d_model, std::size_t num_heads, std::size_t d_ff)
        : d_model_(d_model), num_heads_(num_heads), d_ff_(d_ff) {}
    XTGRAD_ARG(std::size_t, d_model);
    XTGRAD_ARG(std::size_t, num_heads);
    XTGRAD_ARG(std::size_t, d_ff);
    XTGRAD_ARG(float, dropout) = 0.1f;  // the tutorial's run
};

using EncoderLayerOptions = LayerOptionsOf<struct EncoderLayerTag>;
using DecoderLayerOptions = LayerOptionsOf<struct DecoderLayerTag>;

}  // namespace xtgrad::nn::tutorial_b
