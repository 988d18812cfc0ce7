// Named forward/backward kernels on raw buffers (llm.c style): each can be called and
// tested alone, and each is a place to break in a debugger (`break xtgrad::softmax_backward`).
#pragma once

#include "autograd/ops.hpp"

#include <cstddef>

namespace xtgrad {

// Rows of `len` values, `inner` apart, in (outer, len, inner) layout.
// softmax: dx = y (g - Σ g y);  log_softmax (log = true): dx = g - exp(y) Σ g
void softmax_backward(const float* g, const float* y, float* dx, std::size_t outer, std::size_t len,
                      std::size_t inner, bool log);

void gelu_forward(const float* x, float* y, std::size_t n, GeluApproximation approx);
void gelu_backward(const float* x, const float* g, float* dx, std::size_t n, GeluApproximation approx);

}  // namespace xtgrad
