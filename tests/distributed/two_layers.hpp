// The data-parallel tests' small model: two Linear layers, the second left out of the forward
// when skip_fc2 is set (a parameter the output does not depend on).
#pragma once

#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/nn/layers.hpp>

#include <memory>

namespace xtgrad::test {

struct TwoLayers : nn::Module {
    std::shared_ptr<nn::Linear> fc1 = register_module("fc1", std::make_shared<nn::Linear>(3, 4));
    std::shared_ptr<nn::Linear> fc2 = register_module("fc2", std::make_shared<nn::Linear>(4, 2));
    bool skip_fc2 = false;
    Tensor forward(const Tensor& x) const { return skip_fc2 ? fc1->forward(x) : fc2->forward(relu(fc1->forward(x))); }
};

}  // namespace xtgrad::test
