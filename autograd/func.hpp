// Function transforms over callables, with torch.func's names (Debian's torch 1.13 has the same
// maths in torch.autograd.functional): grad, vjp, jvp, jacrev, jacfwd, hessian, hvp.
//
//   auto loss = [&](const std::vector<Tensor>& p) { return cross_entropy(model_with(p), target); };
//   std::vector<Tensor> g = func::grad(loss)(params);                  // d loss / d params
//   auto [value, hv] = func::hvp(loss, params, directions);            // Hessian · directions
//   std::vector<std::vector<Tensor>> H = func::hessian(loss)(params);  // H[i][j]: (p_i..., p_j...)
//
// Each transform differentiates f with respect to the tensors it is given, one slot each (a tensor
// given twice has a derivative per slot, as torch.func). When f's graph reaches a tensor that
// requires grad besides those slots — an input that requires grad, a weight f captures, an outer
// transform's variable — the results are recorded (create_graph, autograd/grad.hpp) and stay
// differentiable through it, so transforms compose (hessian is jacfwd of grad; a gradient penalty
// is a gradient of func::grad); otherwise they are constants. No tensor's .grad is touched.
//
// jvp and jacfwd are true forward mode (autograd/forward_ad.hpp): f runs once on dual tensors and
// every op's jvp rule pushes the tangents along, about the cost of one more forward. They open a
// dual level of their own, so they cannot be called inside one (nor nested in each other). The
// double-backward trick (jvp(f, x, v) = d/du ⟨vjpᵤ(f, x), v⟩, as JAX's linear_transpose would
// give) stays as jvp_by_double_backward and jacfwd_by_double_backward: the same numbers by
// another road, which the tests check the rules against. `jacfwd` builds the Jacobian a column
// per input element, `jacrev` a row per output element: pick the one with fewer
// (docs/higher_order.md).
#pragma once

#include <xtgrad/autograd/tensor.hpp>

#include <functional>
#include <utility>
#include <vector>

namespace xtgrad::func {

// A function of tensors returning one tensor.
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
using Grads = std::vector<Tensor>;

// torch.func.grad: the gradient of a one-element f with respect to each input.
std::function<Grads(const std::vector<Tensor>&)> grad(Fn f);

// torch.func.vjp: f's output, and the function that takes a cotangent shaped like it to
// cotangentᵀ · J, one tensor per input. The function may be called more than once.
std::pair<Tensor, std::function<Grads(const Tensor&)>> vjp(const Fn& f, const std::vector<Tensor>& primals);

// torch.func.jvp: f's output and J · tangents (tangents one per input, shaped like it), in forward
// mode. The tangent is a tensor of the reverse-mode graph when the primals, the tangents or what f
// captures require grad, so it can be differentiated; f may take gradients itself (jvp of
// func::grad(loss) is the loss's Hessian-vector product: forward-over-reverse).
std::pair<Tensor, Tensor> jvp(const Fn& f, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents);
// The same J · tangents by the double-backward trick: a recorded backward and a backward of it.
std::pair<Tensor, Tensor> jvp_by_double_backward(const Fn& f, const std::vector<Tensor>& primals,
                                                 const std::vector<Tensor>& tangents);

// torch.func.jacrev / jacfwd: the Jacobian of f with respect to each input, shaped
// (output..., input_i...). Reverse: one vjp per output element; forward: one jvp per input element.
std::function<Grads(const std::vector<Tensor>&)> jacrev(Fn f);
std::function<Grads(const std::vector<Tensor>&)> jacfwd(Fn f);
std::function<Grads(const std::vector<Tensor>&)> jacfwd_by_double_backward(Fn f);

// torch.func.hessian of a one-element f: H[i][j] = d²f / (d input_i d input_j), shaped
// (input_i..., input_j...).
std::function<std::vector<Grads>(const std::vector<Tensor>&)> hessian(Fn f);

// torch.autograd.functional.hvp: f's value (one element) and H · tangents, one per input; one
// gradient and one backward of it, whatever the inputs' size.
std::pair<Tensor, Grads> hvp(const Fn& f, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents);

}  // namespace xtgrad::func
