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
// Where the product would run on a skinny_tn kernel (AVX-512 or AVX2), it is not even stored:
// it offers the gradient as its two factors (dyᵀ and x, 7 rows each), and a consumer that can
// (Adam, AdamW) makes each row of it inside its update loop, with that kernel's sum, so the
// update is the same bit for bit (vec::adam_update_product) and the gradient's write and read
// are gone: its multiply-adds run under the update's memory time. Measured against storing the
// gradient first (the Winter Games step, 1 thread, Zen 5): docs/performance.md, "The Winter
// Games step". Slower, and not kept: the kernel handing stored rows to Adam's update between its
// own rows (60-85 % of the update's speed over the whole array, calls and all).
#pragma once

#include <xtgrad/autograd/array.hpp>

#include <cstddef>
#include <functional>
#include <memory>

namespace xtgrad {
namespace vec {
struct RankKGradient;  // a gradient as its two factors (simd/vector_kernels.hpp, internal)
}

class Node;
struct TensorImpl;

class GradientConsumer {
public:
    virtual ~GradientConsumer() = default;
    // Whether the gradient must be proven finite first (the optimizer checks finiteness).
    virtual bool needs_finite() const = 0;
    // The leaf's whole gradient, of its shape: the step on it. Proven finite if needs_finite().
    virtual void consume(TensorImpl& leaf, std::shared_ptr<Array> gradient) = 0;
    // The step on the gradient given as its factors, never stored (rows x cols its shape, read
    // row-major; proven finite as above): true if it took it, with the update consume() would make
    // on the stored product; false (the default) to have it stored and consume()d instead.
    virtual bool consume_product(TensorImpl& leaf, const vec::RankKGradient& gradient) {
        (void)leaf, (void)gradient;
        return false;
    }
};

// For a backward's input `input` whose gradient (of shape `shape`) the kernel can compute alone:
// when the engine offers a consumer for it and, if the consumer needs it, finite() proves the
// gradient finite, hands it over: as `factors` (the product write(out) computes, alpha 1,
// beta 0) where given, gemm_ld would run that product on a skinny_tn kernel and the
// consumer takes it so, else computed with write(out) into a new array. Returns whether it did;
// if not, nothing ran, and the caller writes the gradient through grad_out.
bool give_gradient_to_consumer(Node& self, std::size_t input, const Shape& shape, const std::function<bool()>& finite,
                               const std::function<void(float* out)>& write,
                               const vec::RankKGradient* factors = nullptr);

namespace detail {
// Whether every element of a product of these operands, with inner dimension K and c_size
// elements, is finite: every operand finite, and K · max|a| · max|b| below half the largest float
// (each element is a sum of K products; the factor 2 leaves room for the partial sums' rounding).
// False, without reading them, when the operands hold more elements than the product: scanning
// the product itself is cheaper then (a weight gradient over many rows).
bool product_provably_finite(const float* A, std::size_t a_size, const float* B, std::size_t b_size, int K,
                             std::size_t c_size);
// Gradients handed to a consumer so far in this process, and of them those handed over as their
// factors (tests assert that the paths ran).
std::size_t consumed_gradients();
std::size_t consumed_as_factors();
}  // namespace detail

}  // namespace xtgrad
