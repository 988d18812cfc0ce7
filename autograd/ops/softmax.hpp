// Softmax's row kernels, beside their op (ops/softmax.cpp: softmax, log_softmax; attention's
// fused blocks call them too). Named kernels on raw buffers (llm.c style): each can be called and
// tested alone, and each is a place to break in a debugger (`break xtgrad::softmax_backward`).
// The backward writes its gradient through GradOut (autograd/node.hpp).
#pragma once

#include <xtgrad/autograd/node.hpp>
#include <xtgrad/autograd/ops.hpp>

#include <cstddef>

namespace xtgrad {

// What a softmax row's Error names: the op, the row's index and the shape of the whole tensor.
struct SoftmaxRowName {
    const char* op;
    std::size_t row;
    const Shape& shape;
};
// One row of `len` values `st` apart (x and y may be the same buffer): y = exp(x - max) / Σ, or
// (log) x - max - log Σ. A row that is entirely -inf or whose finite values are NaN throws.
void softmax_row(const float* x, float* y, std::size_t len, std::size_t st, bool log, const SoftmaxRowName& name);

// Rows of `len` values, `inner` apart, in (outer, len, inner) layout.
// softmax: dx = y (g - Σ g y);  log_softmax (log = true): dx = g - exp(y) Σ g
void softmax_backward(const float* g, const float* y, GradOut dx, std::size_t outer, std::size_t len,
                      std::size_t inner, bool log);

// Makes y (= softmax or log_softmax of a along dim, computed by the caller) the output of a's
// softmax node: cross_entropy's backward in ops turns its saved probabilities back into a tensor
// of the graph this way. Returns y.
Tensor attach_softmax(Tensor y, const Tensor& a, int dim, bool log);

}  // namespace xtgrad
