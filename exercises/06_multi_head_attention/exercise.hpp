// Exercise 06: multi-head attention built from the pieces, checked against the module
// (docs/learn/06_multi_head_attention.md).
#pragma once

#include <xtgrad/xtgrad.hpp>

namespace ex06 {

// torch.nn.MultiheadAttention's forward (tutorial D's module, no masks, no dropout), written
// with m's own parameters: query (Lq, N, E), key and value (Lk, N, E) -> (Lq, N, E).
xtgrad::Tensor multi_head_attention(const xtgrad::Tensor& query, const xtgrad::Tensor& key,
                                    const xtgrad::Tensor& value,
                                    const xtgrad::nn::tutorial_d::MultiheadAttention& m);

}  // namespace ex06
