// Exercise 11: the backward engine, yours (docs/learn/11_build_the_engine.md). The grader plugs
// run_backward into xtgrad with set_backward_engine (autograd/engine.hpp), so Tensor::backward()
// runs it, and compares every gradient with xtgrad's own engine, bit for bit.
#pragma once

#include <xtgrad/xtgrad.hpp>

#include <vector>

namespace ex11 {

// Every tensor of root's graph that requires grad, root included, each once, every tensor
// AFTER all the tensors it was computed from (so the reverse visits every consumer before what
// it consumes). Walk from root over t->grad_fn->inputs(); skip inputs that are null or do not
// require grad.
std::vector<xtgrad::ImplPtr> topological_order(const xtgrad::Tensor& root);

// One whole backward pass from root, seeded with grad_output (root's shape):
//  - each tensor's total gradient is the sum of what all its consumers sent it;
//  - a tensor's node runs once, when that total is complete: node.run_into(total, sink) leaves
//    in sink[i] the gradient for node.inputs()[i] (null when that input needs none);
//  - a leaf (no grad_fn) adds its total into its .grad (TensorImpl::grad, a shared_ptr<Array>:
//    make one if it is null): .grad accumulates across passes, until zero_grad();
//  - unless retain_graph, node.release() after the node ran frees what it saved.
void run_backward(const xtgrad::Tensor& root, const xtgrad::Array& grad_output, bool retain_graph);

}  // namespace ex11
