// Input checks shared by tutorial A's modules. Each throws xtgrad::Error naming the module
// type, its path and the shapes involved, e.g.
//   MultiHeadAttention 'encoder.encoder_layers.0.attention': attn_mask (3,6,6) does not match (batch, len_q, len_k) = (3,6,7)
#pragma once

#include <xtgrad/nn/module.hpp>

namespace xtgrad::nn::tutorial_a::check {

// x must be (batch, len, d).
void features(const Module& m, const char* type, const char* what, const Tensor& x, std::size_t d);
// mask must have exactly the shape `expected`.
void mask(const Module& m, const char* type, const char* what, const Mask& mask, const Shape& expected);
// ids must be (batch, len) with every id in [0, num_rows).
void ids(const Module& m, const char* type, const char* what, const Ids& ids, std::size_t num_rows);
// lengths must be (batch) or (batch, 1) (the notebook describes input_len as [B, 1]);
// returns batch.
std::size_t lengths(const Module& m, const char* type, const char* what, const Ids& lengths);

}  // namespace xtgrad::nn::tutorial_a::check
