// Exercise 07: find the erratum from its symptom (docs/learn/07_find_the_erratum.md).
//
// A user ran tutorial A's notebook, as written, on one input and recorded what its
// MultiHeadAttention(64, 8) returned (symptom.hpp): the attention maps are much more peaked
// than those of xtgrad's module with the same weights. Which of the notebook's slips explain it? xtgrad keeps three of them behind switches (nn/tutorial_a/options.hpp):
//   split       HeadSplit::transpose (intent)  or HeadSplit::view_only (erratum 3)
//   scale       ScaleRule::sqrt_dk (intent)    or ScaleRule::dk_over_heads (erratum 4)
//   layer_norm  LayerNormKind::torch (the notebook's code) or LayerNormKind::custom
#pragma once

#include <xtgrad/xtgrad.hpp>

namespace ex07 {

// The switches with which xtgrad's MultiHeadAttention reproduces the recorded run.
xtgrad::nn::tutorial_a::Errata notebook_switches();

}  // namespace ex07
