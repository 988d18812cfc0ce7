// make_result: how an op joins the graph. Every op computes its output array, then calls
//
//   return make_result(std::move(out), "MulBackward", {a, b}, {{"self", a}, {"other", b}},
//                      [](Node& self, const Array& g) {
//                          if (self.needs_grad(0)) self.accumulate(0, Array(g * self.saved("other")));
//                          ...
//                      });
//
// with the inputs (the graph's edges), what backward reads under torch's names (autograd/saved.hpp;
// `{}` when it reads nothing) and the backward closure, which reads them through self.saved(name)
// and writes the inputs' gradients through the contract of autograd/grad_out.hpp.
// The node is only built when grad mode is on and some input requires a gradient, so
// inference pays nothing for autograd. `where` defaults to the caller's file:line, i.e. the
// op's make_result() call; the node keeps it for anomaly errors and the debugger. In anomaly
// mode (autograd/anomaly.hpp) every output is checked here, whether or not a node is built.
#pragma once

#include <xtgrad/autograd/node.hpp>
#include <xtgrad/autograd/source_location.hpp>
#include <xtgrad/autograd/tensor.hpp>

#include <vector>

namespace xtgrad {

Tensor make_result(Array out, const char* op, const std::vector<Tensor>& inputs, std::vector<SavedRecord> saved,
                   Node::BackwardFn backward, SourceLocation where = SourceLocation::current());

// The same for an output tensor that already exists (so the node can save the output itself as
// "result", e.g. exp's backward reuses exp(x)). Returns `result`.
Tensor attach_grad_fn(Tensor result, const char* op, const std::vector<Tensor>& inputs,
                      std::vector<SavedRecord> saved, Node::BackwardFn backward,
                      SourceLocation where = SourceLocation::current());

// True when an op with these inputs records a node (grad mode on, some input requires grad).
bool records_graph(const std::vector<Tensor>& inputs);

}  // namespace xtgrad
