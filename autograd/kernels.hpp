// Named forward/backward kernels on raw buffers (llm.c style): each can be called and
// tested alone, and each is a place to break in a debugger (`break xtgrad::softmax_backward`).
// Backward kernels write gradients through GradOut (autograd/grad_out.hpp): overwrite a fresh
// buffer, add into a running sum; an empty GradOut is skipped.
#pragma once

#include <xtgrad/autograd/grad_out.hpp>
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

// Dropout's mask for a tensor of `shape`, drawn as torch 1.13 draws it (one bernoulli(1 - p) per
// element, in order, from `gen`): kept[i] = true where the element stays, scaled by `keep` =
// 1 / (1 - p). dropout and dropout_matmul draw through here, so their masks equal torch's.
struct DropoutMask {
    Mask kept;
    float keep;
};
DropoutMask draw_dropout_mask(const Shape& shape, float p, Generator& gen);
// An Error naming `op` unless 0 <= p <= 1.
void check_dropout_probability(float p, const char* op);

void gelu_forward(const float* x, float* y, std::size_t n, GeluApproximation approx);
void gelu_backward(const float* x, const float* g, GradOut dx, std::size_t n, GeluApproximation approx);

// x (rows, d) -> y; mean, rstd (rows) saved for backward. w, b may be null.
void layer_norm_forward(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd,
                        std::size_t rows, std::size_t d, float eps);
// Writes dx (rows, d), dw (d), db (d); any may be empty.
void layer_norm_backward(const float* g, const float* x, const float* w, const float* mean, const float* rstd,
                         GradOut dx, GradOut dw, GradOut db, std::size_t rows, std::size_t d);

}  // namespace xtgrad
