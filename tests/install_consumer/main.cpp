// Uses the installed headers and library: a gradient through a Linear layer.
#include "nn/layers.hpp"
#include "xtgrad.hpp"

int main() {
    xtgrad::nn::Linear layer(3, 2);
    xtgrad::Tensor x = xtgrad::Tensor::ones({4, 3}, true);
    xtgrad::Tensor loss = xtgrad::sum(layer.forward(x));
    loss.backward();
    fmt::print("installed xtgrad works: loss {}, d loss/d weight {}\n", loss.item(), xtgrad::shape_str(layer.weight.grad_array().shape()));
    return layer.weight.has_grad() ? 0 : 1;
}
