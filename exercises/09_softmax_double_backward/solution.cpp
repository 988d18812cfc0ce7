// Exercise 09, solved: dx = y ⊙ (g − ⟨g, y⟩) per row, with y the saved output as a tensor of the
// graph (saved_tensor), so that d(dx)/dx includes dy/dx in both places y appears.
#include "exercise.hpp"

#include <xtgrad/autograd/node.hpp>

namespace ex09 {

using namespace xtgrad;

Grads softmax_backward_in_ops(const Node& self, const Tensor& g) {
    const Tensor y = self.saved_tensor("result");
    return {mul(y, sub(g, sum(mul(g, y), {1}, /*keepdim=*/true)))};
}

}  // namespace ex09
