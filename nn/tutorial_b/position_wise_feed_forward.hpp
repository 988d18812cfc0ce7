// Tutorial B, "FFN": class PositionWiseFeedForward(d_model, d_ff).
//
//   output = fc2(relu(fc1(x)))        x (B, L, d) -> (B, L, d_ff) -> (B, L, d)
//
// The same two Linear layers act on every position independently. No residual and no norm
// here (B's layers add them outside); compare tutorials A and C, whose FFN is two kernel-1
// Conv1d layers with the residual and LayerNorm inside
// (nn/tutorial_a/positional_wise_feed_forward.hpp).
//
// The tutorial's text says this layer "lets the model consider the positions of the input
// elements"; it does the opposite: it maps each position alone, and only attention mixes
// positions (docs/tutorial_b.md).
#pragma once

#include <xtgrad/nn/layers.hpp>
#include <xtgrad/nn/module.hpp>
#include <xtgrad/nn/options.hpp>

#include <memory>

namespace xtgrad::nn::tutorial_b {

// PositionWiseFeedForwardOptions(512, 2048)
class PositionWiseFeedForwardOptions {
public:
    PositionWiseFeedForwardOptions(std::size_t d_model, std::size_t d_ff) : d_model_(d_model), d_ff_(d_ff) {}
    XTGRAD_ARG(std::size_t, d_model);  // input and output width
    XTGRAD_ARG(std::size_t, d_ff);     // the hidden width between fc1 and fc2
};

class PositionWiseFeedForward : public Module {
public:
    XTGRAD_OPTIONS_CONSTRUCTORS(PositionWiseFeedForward);
    Tensor forward(const Tensor& x) const;  // x (..., d_model) -> (..., d_model)

    std::shared_ptr<Linear> fc1, fc2;
    std::shared_ptr<ReLU> relu;
};

}  // namespace xtgrad::nn::tutorial_b
