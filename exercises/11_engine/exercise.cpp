// Exercise 11: the engine. Two functions: the order, then the pass that walks it. Lesson 0's
// rule (a tensor used twice gets the sum) and lesson 5's trace (one line per node, consumers
// first) are all it takes.
#include "exercise.hpp"

namespace ex11 {

using namespace xtgrad;

std::vector<ImplPtr> topological_order(const Tensor& root) {
    // TODO: every tensor that requires grad, reached from root through grad_fn->inputs(), once,
    // each after the tensors it was computed from.
    (void)root;
    return {};
}

void run_backward(const Tensor& root, const Array& grad_output, bool retain_graph) {
    // TODO: walk the order so that each node runs once its output's gradient is complete; sum
    // what reaches each tensor; leaves add into .grad; release unless retain_graph.
    (void)root;
    (void)grad_output;
    (void)retain_graph;
}

}  // namespace ex11
