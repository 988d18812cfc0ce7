// The position-wise feed-forward block of tutorials A and C, from two kernel-1 convolutions:
//
//   output = w2(relu(w1(xᵀ)))ᵀ                  w1 Conv1d(d_model -> d_ff, 1), w2 Conv1d(d_ff -> d_model, 1)
//   output = layer_norm(x + dropout(output))    x (B, L, d_model)
//
// ᵀ swaps the last two axes: Conv1d wants channels first (B, d, L). A kernel-1 convolution is
// the same linear map at every position, hence "position-wise". w1, w2 are the paper's names
// (FFN(x) = max(0, x W1 + b1) W2 + b2). Each tutorial's class is this block with its own
// constructor and state names: tutorial A's PositionalWiseFeedForward registers the
// convolutions as w1/w2, tutorial C's PoswiseFeedForwardNet as conv1/conv2 (fixture
// ffn_conv1d__c_names). Tutorial B's PositionWiseFeedForward (two Linear layers, no residual
// inside) is another computation, in nn/tutorial_b.
#pragma once

#include <xtgrad/nn/layer_norm_choice.hpp>
#include <xtgrad/nn/layers.hpp>
#include <xtgrad/nn/options.hpp>

#include <functional>
#include <memory>
#include <string>

namespace xtgrad::nn {

// The state names of the two convolutions: tutorial A's w1/w2 or tutorial C's conv1/conv2.
struct ConvNames {
    std::string first = "w1";
    std::string second = "w2";
    static ConvNames tutorial_c() { return {"conv1", "conv2"}; }
};

class ConvFeedForwardOptions {
public:
    ConvFeedForwardOptions(std::size_t d_model, std::size_t d_ff) : d_model_(d_model), d_ff_(d_ff) {}
    XTGRAD_ARG(std::size_t, d_model);
    XTGRAD_ARG(std::size_t, d_ff);
    XTGRAD_ARG(float, dropout) = 0.f;
    XTGRAD_ARG(LayerNormKind, layer_norm) = LayerNormKind::torch;
    XTGRAD_ARG(ConvNames, conv_names) = {};
};

class ConvFeedForward : public Module {
public:
    // `type` names the module in errors: the tutorial's class name.
    explicit ConvFeedForward(const ConvFeedForwardOptions& options, const char* type = "ConvFeedForward");

    Tensor forward(const Tensor& x) const;  // x (B, L, d_model) -> (B, L, d_model)

    ConvFeedForwardOptions options;
    std::shared_ptr<Conv1d> w1, w2;  // registered as options.conv_names()
    std::shared_ptr<Dropout> dropout;
    std::shared_ptr<Module> layer_norm;  // nn::LayerNorm, or nn::LayerNormUnbiased with LayerNormKind::custom

private:
    const char* type_;
    std::function<Tensor(const Tensor&)> norm_;
};

}  // namespace xtgrad::nn
