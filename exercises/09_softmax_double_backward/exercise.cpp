// Exercise 09: softmax's backward as a program of xtgrad's ops, which grad() can differentiate.
//
// The formula is lesson 2's. What is new is what it is computed from: every tensor it reads must
// carry its dependence on x, or the second derivative silently loses that part. Node
// (autograd/node.hpp) gives a saved value back in more than one form: which one keeps it?
#include "exercise.hpp"

#include <xtgrad/autograd/node.hpp>

namespace ex09 {

using namespace xtgrad;

Grads softmax_backward_in_ops(const Node& self, const Tensor& g) {
    // TODO: dx, from the saved output and g, with xtgrad's ops on tensors.
    (void)self;
    (void)g;
    return {Tensor()};
}

}  // namespace ex09
