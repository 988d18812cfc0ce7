// Exercise 05: the spiral MLP's forward and its training step (docs/learn/05_mlp_spiral.md).
#pragma once

#include <xtgrad/xtgrad.hpp>

#include <cstdint>
#include <memory>

namespace ex05 {

// The model (given): 2 -> 64 -> 3, with torch's parameter names fc1.weight (64,2), fc1.bias (64),
// fc2.weight (3,64), fc2.bias (3).
struct MLP : xtgrad::nn::Module {
    std::shared_ptr<xtgrad::nn::Linear> fc1 = register_module("fc1", std::make_shared<xtgrad::nn::Linear>(2, 64));
    std::shared_ptr<xtgrad::nn::Linear> fc2 = register_module("fc2", std::make_shared<xtgrad::nn::Linear>(64, 3));
    // x (N, 2) -> logits (N, 3): fc2(relu(fc1(x))).
    xtgrad::Tensor forward(const xtgrad::Tensor& x) const;
};

// One full-batch step of training: the loss cross_entropy(model.forward(x), y), the gradients
// of this step only, then opt.step(). Returns the loss (before the update).
float train_step(const MLP& model, xtgrad::optim::Optimizer& opt, const xtgrad::Tensor& x, const xtgrad::Ids& y);

// The data (given, spiral_data.cpp): 3 spirals of 100 points, labels 0, 1, 2.
void make_spirals(xtgrad::Tensor& points, xtgrad::Ids& labels, std::uint64_t seed);

}  // namespace ex05
