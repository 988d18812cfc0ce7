// Exercise 03: tutorial A's own LayerNorm as one node with a hand-written backward
// (docs/learn/03_layer_norm.md). Per row of d values:
//   μ = mean(x),  s = √(Σ(x − μ)² / (d − 1))  (unbiased),  y = γ (x − μ) / (s + ε) + β
#pragma once

#include <xtgrad/xtgrad.hpp>

namespace ex03 {

struct LayerNormGrads {
    xtgrad::Array dx;      // (rows, d)
    xtgrad::Array dgamma;  // (d)
    xtgrad::Array dbeta;   // (d)
};

// x (rows, d), gamma (d), g = the gradient of y (rows, d).
LayerNormGrads layer_norm_a_backward(const xtgrad::Array& x, const xtgrad::Array& gamma, const xtgrad::Array& g,
                                     float eps);

// Optional, the intermediate quantities of your derivation, per row (rows, 2): column 0 the
// mean of h = g ⊙ γ over the row, column 1 Σ_i h_i u_i with u = x − μ. The grader checks them
// before dx unless this returns Array() (0-d): then they are skipped.
xtgrad::Array row_sums(const xtgrad::Array& x, const xtgrad::Array& gamma, const xtgrad::Array& g);

// The op (given): forward in one pass, backward = layer_norm_a_backward.
xtgrad::Tensor layer_norm_a(const xtgrad::Tensor& x, const xtgrad::Tensor& gamma, const xtgrad::Tensor& beta,
                            float eps);

}  // namespace ex03
