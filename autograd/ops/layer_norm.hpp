// Layer norm's kernels, beside their op (ops/layer_norm.cpp). Named kernels on raw buffers
// (llm.c style): each can be called and tested alone and broken on
// (`break xtgrad::layer_norm_backward`). The backward writes its gradients through GradOut
// (autograd/node.hpp): overwrite a fresh buffer, add into a running sum; an empty one is skipped.
#pragma once

#include <xtgrad/autograd/node.hpp>

#include <cstddef>

namespace xtgrad {

// x (rows, d) -> y; mean, rstd (rows) saved for backward. w, b may be null.
void layer_norm_forward(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd,
                        std::size_t rows, std::size_t d, float eps);
// y from x and the saved mean and rstd: the forward's output again, the same bits.
void layer_norm_apply(const float* x, const float* w, const float* b, const float* mean, const float* rstd, float* y,
                      std::size_t rows, std::size_t d);
// Writes dx (rows, d), dw (d), db (d); any may be empty.
void layer_norm_backward(const float* g, const float* x, const float* w, const float* mean, const float* rstd,
                         GradOut dx, GradOut dw, GradOut db, std::size_t rows, std::size_t d);

}  // namespace xtgrad
