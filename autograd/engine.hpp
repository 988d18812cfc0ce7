// The backward engine: Tensor::backward() calls run_backward().
//
// 1. Topological order. A depth-first walk from the root over grad_fn -> inputs, written
//    with an explicit stack (a 6-layer Transformer's graph is thousands of nodes deep in
//    places; recursion could overflow the stack). A tensor is appended after all tensors
//    it depends on, so the reversed list visits every consumer before what it consumes.
// 2. Walk that list: a tensor's node runs once all its consumers have added their
//    gradients into it, so a tensor used twice gets the sum of both contributions.
// 3. Non-leaf gradients are dropped as soon as their node has run (unless retain_grad());
//    leaf gradients accumulate across backward calls until zero_grad().
// 4. Unless retain_graph, each node releases what it saved: the graph is freed.
#pragma once

#include "autograd/array.hpp"

#include <cstdio>
#include <functional>
#include <memory>
#include <string>

namespace xtgrad {

struct TensorImpl;
class Node;

void run_backward(const std::shared_ptr<TensorImpl>& root, const Array& grad_output, bool retain_graph);

// Tracing: print each backward node as it runs, with its gradient's shape and norm.
// Also switched on by the environment variable XTGRAD_TRACE=1.
void set_trace(bool on, std::FILE* out = stderr);
bool trace_enabled();

// One line per node, given to the trace; exposed so the learning tools can format it.
struct TraceEvent {
    std::size_t step;            // 0, 1, 2, ... in execution order
    const Node* node;
    const TensorImpl* output;    // the tensor whose gradient flows into the node
    double grad_norm;
};

}  // namespace xtgrad
