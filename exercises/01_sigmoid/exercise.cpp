// Exercise 01: sigmoid as an op of its own. Lesson 1 writes `square` this way, line by line.
#include "exercise.hpp"

#include <xtgrad/autograd/node.hpp>

namespace ex01 {

using namespace xtgrad;

Tensor sigmoid(const Tensor& x) {
    // TODO 1 (forward): the values σ(x). xtensor evaluates expressions such as
    //   1.f / (1.f + xt::exp(-x.data()))
    // into an Array.
    Array y = xt::zeros<float>(x.shape());

    // The node: inputs {x}; saved values by name (what backward reads); the backward closure.
    // Tip: derive σ'(x) first; it can be written with σ(x) alone, so saving the result, not the
    // input, is enough. Save it
    // with attach_grad_fn (autograd/node.hpp): make the output Tensor from y first, then attach
    // the node to it. Not {"result", Tensor(y)} in this call: C++ leaves the order of a call's
    // arguments open, so Tensor(y) may be built after std::move(y) emptied y (clang does that).
    return make_result(std::move(y), "SigmoidBackward", {x}, {},
                       [](Node& self, const Array& g) {
                           // TODO 2 (backward): if (self.needs_grad(0)) self.accumulate(0, Array(...));
                           // with g the gradient of the output.
                           (void)self;
                           (void)g;
                       });
}

}  // namespace ex01
