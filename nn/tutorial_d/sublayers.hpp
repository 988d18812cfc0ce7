// The two pieces every Transformer layer of tutorial D repeats, written once. Each layer
// keeps torch's member names (linear1, dropout, linear2, norm1, dropout1, ...) directly on
// itself, so these are functions over those members rather than a shared child module.
#pragma once

#include <xtgrad/nn/layers.hpp>
#include <xtgrad/nn/tutorial_d/layer_options.hpp>

#include <functional>

namespace xtgrad::nn::tutorial_d {

// torch's _ff_block: linear2(dropout(activation(linear1(x)))).  x (..., E) -> (..., E)
Tensor feed_forward(const Linear& linear1, const Dropout& dropout, const Linear& linear2, const Activation& activation,
                    const Tensor& x);

// One residual sub-layer:
//   post-norm (norm_first false):  norm(x + dropout(sublayer(x)))
//   pre-norm  (norm_first true):   x + dropout(sublayer(norm(x)))
Tensor residual(const Tensor& x, const std::function<Tensor(const Tensor&)>& sublayer, const Dropout& dropout,
                const LayerNorm& norm, bool norm_first);

// A layer's input must be 3-D and end in d_model; the Error names the layer and the layout.
void check_layer_input(const Module& layer, const char* layer_type, const char* name, const Tensor& x,
                       std::size_t d_model, bool batch_first);

}  // namespace xtgrad::nn::tutorial_d
