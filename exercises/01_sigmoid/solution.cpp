// Exercise 01, solved: sigmoid saves its result, since σ' = σ(1 − σ).
#include "exercise.hpp"

#include <xtgrad/autograd/node.hpp>

namespace ex01 {

using namespace xtgrad;

Tensor sigmoid(const Tensor& x) {
    Tensor y(Array(1.f / (1.f + xt::exp(-x.data()))));
    return attach_grad_fn(y, "SigmoidBackward", {x}, {{"result", y}}, [](Node& self, const Array& g) {
        if (!self.needs_grad(0)) return;
        const Array& s = self.saved("result");
        self.accumulate(0, Array(g * s * (1.f - s)));
    });
}

}  // namespace ex01
