// Tutorial C, "4. 代码实现": class PoswiseFeedForwardNet.
//
//   output = conv2(relu(conv1(inputs.transpose(1, 2)))).transpose(1, 2)
//   output = layer_norm(output + inputs)                     (B, L, d)
// conv1 Conv1d(d_model -> d_ff, kernel 1), conv2 Conv1d(d_ff -> d_model, kernel 1).
//
// This is tutorial A's PositionalWiseFeedForward computation exactly (FORMAT.md
// `ffn_conv1d__c_names`), so xtgrad has one class for both: this subclass only gives it C's
// constructor and C's state names conv1.*, conv2.*, layer_norm.* (torch LayerNorm, no
// dropout). The members keep A's names: w1 is registered as conv1, w2 as conv2.
#pragma once

#include "nn/tutorial_a/positional_wise_feed_forward.hpp"

namespace xtgrad::nn::tutorial_c {

class PoswiseFeedForwardNet : public tutorial_a::PositionalWiseFeedForward {
public:
    PoswiseFeedForwardNet(std::size_t d_model, std::size_t d_ff)
        : PositionalWiseFeedForward(d_model, d_ff, /*dropout=*/0.f, tutorial_a::LayerNormKind::torch,
                                    tutorial_a::ConvNames::tutorial_c()) {}
};

}  // namespace xtgrad::nn::tutorial_c
