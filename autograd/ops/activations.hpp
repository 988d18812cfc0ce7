// GELU's kernels, beside their op (ops/activations.cpp). Named kernels on raw buffers (llm.c
// style): each can be called and tested alone and broken on (`break xtgrad::gelu_backward`).
// The backward writes its gradient through GradOut (autograd/node.hpp).
#pragma once

#include <xtgrad/autograd/node.hpp>
#include <xtgrad/autograd/ops.hpp>

#include <cstddef>

namespace xtgrad {

void gelu_forward(const float* x, float* y, std::size_t n, GeluApproximation approx);
void gelu_backward(const float* x, const float* g, GradOut dx, std::size_t n, GeluApproximation approx);

}  // namespace xtgrad
