// A leaf's gradient handed straight to the optimizer's step in backward, its NaN scan replaced by
// a proof.
//
// With the optimizer stepping in backward (optim/in_backward.hpp), each parameter's gradient is
// written, becomes its .grad, is scanned for NaN and ±Inf (the optimizer's check, before it
// changes anything) and is read by the update. On the Winter Games step (batch 1, 7 tokens) that
// scan read all 44 M gradients once: 3-5 ms of a 35 ms backward. Yet there a weight's gradient is
// one product over 7 rows, dW = dyᵀ·x, which a kernel can prove finite from its few operands:
// every one finite, and too small for a sum of 7 products to overflow (a 7 x 2048 and a 7 x 512
// matrix read, not 2048 x 512). A GradientConsumer takes such a gradient from the kernel, with
// the proof standing in for the scan.
//
// The engine offers a consumer for a node's input (Node::grad_consumer) only where nothing else
// could see or change the gradient: the input is a leaf, this node is its only consumer in the
// pass (one contribution: a sum of proven gradients could still overflow), it has no .grad to add
// into, no register_hook hook and no retain_grad, its only post-accumulate hook is the one that
// registered the consumer, anomaly mode is off and no other observer watches the pass. A kernel
// may decline (not its kind of product, or no proof): it then writes through grad_out and the
// hook runs, scan and all, as always.
//
// Tried and measured slower (docs/performance.md, "The Winter Games step"): handing the gradient
// over a row at a time as the kernel makes it, so that it never reaches memory. Adam's update in
// row pieces, between the kernel's rows, ran at 60-85 % of its speed over the whole array, which
// lost more than the stores saved (writing the gradient into cache is cheap: plain stores).
#pragma once

#include <xtgrad/autograd/array.hpp>

#include <cstddef>
#include <functional>
#include <memory>

namespace xtgrad {

class Node;
struct TensorImpl;

class GradientConsumer {
public:
    virtual ~GradientConsumer() = default;
    // Whether the gradient must be proven finite first (the optimizer checks finiteness).
    virtual bool needs_finite() const = 0;
    // The leaf's whole gradient, of its shape: the step on it. Proven finite if needs_finite().
    virtual void consume(TensorImpl& leaf, std::shared_ptr<Array> gradient) = 0;
};

// For a backward's input `input` whose gradient (of shape `shape`) the kernel can compute alone:
// when the engine offers a consumer for it and, if the consumer needs it, finite() proves the
// gradient finite, computes it with write(out) into a new array and hands it over; returns
// whether it did. If not, nothing ran, and the caller writes the gradient through grad_out.
bool give_gradient_to_consumer(Node& self, std::size_t input, const Shape& shape, const std::function<bool()>& finite,
                               const std::function<void(float* out)>& write);

namespace detail {
// Whether every element of a product of these operands, with inner dimension K and c_size
// elements, is finite: every operand finite, and K · max|a| · max|b| below half the largest float
// (each element is a sum of K products; the factor 2 leaves room for the partial sums' rounding).
// False, without reading them, when the operands hold more elements than the product: scanning
// the product itself is cheaper then (a weight gradient over many rows).
bool product_provably_finite(const float* A, std::size_t a_size, const float* B, std::size_t b_size, int K,
                             std::size_t c_size);
// Gradients handed to a consumer so far in this process (tests assert that the path ran).
std::size_t consumed_gradients();
}  // namespace detail

}  // namespace xtgrad
