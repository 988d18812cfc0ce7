// Exercise 09: softmax's backward written in xtgrad's ops, so that it can be differentiated again
// (docs/learn/09_second_derivatives.md).
#pragma once

#include <xtgrad/xtgrad.hpp>

namespace ex09 {

// Softmax over each row of a 2-D x (given, softmax_rows.cpp). backward() runs its kernel (lesson
// 2's loops on arrays); grad(..., create_graph(true)) runs softmax_backward_in_ops instead.
xtgrad::Tensor softmax_rows(const xtgrad::Tensor& x);

// Yours: the node's backward in ops (Node::DifferentiableFn). g is the gradient of the node's
// output y, (rows, cols); return {dx}, one tensor for the one input, computed from tensors with
// xtgrad's ops (mul, sub, sum(t, dims, keepdim), ...), so that dx is itself a tensor of a graph
// that grad() can differentiate again. The node saved y under the name "result".
xtgrad::Grads softmax_backward_in_ops(const xtgrad::Node& self, const xtgrad::Tensor& g);

// How many times softmax_rows's node ran your function (the grader checks it was yours that ran).
long backward_in_ops_calls();

}  // namespace ex09
