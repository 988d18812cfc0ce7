// Gradients as tensors: torch.autograd.grad, and gradients of gradients.
//
//   std::vector<Tensor> g = grad({loss}, {w}, {}, GradOptions().create_graph(true));
//   Tensor gnorm = sum(g[0] * g[0]);        // a gradient penalty: g[0] is a tensor of a graph
//   std::vector<Tensor> h = grad({gnorm}, {w});  // ... so it can be differentiated again
//
// grad() returns d(outputs)/d(inputs) without touching any tensor's .grad (backward() is the one
// that accumulates). Without create_graph each node runs its kernel backward, as backward() does,
// and the gradients are constants. With create_graph each node runs its backward written in
// xtgrad's own ops (Node::DifferentiableFn: every op of autograd/ops.hpp has one), so the
// gradients come with the graph that computed them — the backward pass is itself a program,
// recorded like any forward (its nodes' Node::backward_depth() is 1, their own backward's 2, ...)
// and differentiable to any order. A node whose backward has no such form stops create_graph with
// an Error naming it, never a silently wrong higher derivative.
//
// The pass is a walk of its own (not autograd/engine.cpp's BackwardPass): gradients live in the
// walk's map, not in the tensors' `incoming` buffers, so a grad() may run inside another pass (a
// backward in ops that calls grad() on a recomputed subgraph does) and leaves every tensor's state
// as it was. Only the nodes between the outputs and the inputs run.
#pragma once

#include <xtgrad/autograd/tensor.hpp>
#include <xtgrad/nn/options.hpp>

#include <optional>
#include <vector>

namespace xtgrad {

struct GradOptions {
    // Record the backward pass as a graph, so the gradients can be differentiated again.
    XTGRAD_ARG(bool, create_graph) = false;
    // Keep the graph of the outputs for another pass; unset: as create_graph (torch's default).
    XTGRAD_ARG(std::optional<bool>, retain_graph);
    // An input that the outputs do not depend on gets an undefined tensor instead of an Error.
    XTGRAD_ARG(bool, allow_unused) = false;
};

// d(outputs)/d(inputs), weighted by grad_outputs (one per output, shaped like it; empty: ones,
// for one-element outputs), summed over the outputs: torch.autograd.grad. One tensor per input.
// grad_outputs may themselves require grad (the double-backward trick of func::jvp does).
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, const GradOptions& options = {});

namespace detail {

// grad() for a node's backward in ops that recomputes its forward from primitives (the fused
// ops: attention, layer norm, cross-entropy, conv1d): the partial derivatives of `output` with
// respect to each of `inputs` alone, with create_graph. The walk stops at the inputs, so it never
// descends into the graph they came from (a node's backward gives partials; the outer pass chains).
std::vector<Tensor> partials(const Tensor& output, const std::vector<Tensor>& inputs, const Tensor& grad_output);

// Tensor::backward(create_graph = true): grad() over every leaf and retain_grad() tensor, the
// results added into their .grad (graph kept beside it: TensorImpl::grad_graph).
void backward_creating_graph(const Tensor& root, const Array& grad_output);

// g summed back to `shape` (the dims a broadcast added or stretched), in ops: differentiable.
Tensor sum_to(const Tensor& g, const Shape& shape);

}  // namespace detail

}  // namespace xtgrad
