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

// x (rows, d) -> y; mean, rstd (rows) saved for backward. w, b may be null.
void layer_norm_forward(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd,
                        std::size_t rows, std::size_t d, float eps);
// Adds into dx (rows, d), dw (d), db (d); any may be null.
void layer_norm_backward(const float* g, const float* x, const float* w, const float* mean, const float* rstd,
                         float* dx, float* dw, float* db, std::size_t rows, std::size_t d);

}  // namespace xtgrad
