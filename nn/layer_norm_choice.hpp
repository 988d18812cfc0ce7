// The LayerNorm after a residual addition in tutorial A's attention and FFN (and so in the
// shared ConvFeedForward): torch's nn.LayerNorm (what the notebook's code uses) or the
// notebook's own LayerNorm class ("Layer normalization的实现", nn::LayerNormUnbiased). Both
// register as `layer_norm`; their state names differ (weight/bias against gamma/beta).
#pragma once

#include <xtgrad/nn/module.hpp>

#include <functional>
#include <memory>

namespace xtgrad::nn {

enum class LayerNormKind {
    torch,   // nn.LayerNorm(d): biased variance, eps 1e-5 inside the sqrt (the notebook's code)
    custom,  // the notebook's own LayerNorm class: gamma/beta, unbiased std, eps 1e-6 added to the std
};

struct LayerNormChoice {
    std::shared_ptr<Module> module;                // register it as a child
    std::function<Tensor(const Tensor&)> forward;  // calls that module's forward
};

LayerNormChoice make_layer_norm(LayerNormKind kind, std::size_t model_dim);

}  // namespace xtgrad::nn
