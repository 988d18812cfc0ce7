// Exercise 04: scaled dot-product attention's backward, masks included (docs/learn/04_attention.md).
//   S = q kᵀ · scale;  S[masked] = −∞;  A = softmax over each row of S;  out = A v
// q (Lq, d), k (Lk, d), v (Lk, dv), masked (Lq, Lk): true = the query may not look at that key.
#pragma once

#include <xtgrad/xtgrad.hpp>

namespace ex04 {

struct AttentionGrads {
    xtgrad::Array dq, dk, dv;
};

// A: the weights the forward computed (Lq, Lk); g: the gradient of out (Lq, dv).
AttentionGrads attention_backward(const xtgrad::Array& q, const xtgrad::Array& k, const xtgrad::Array& v,
                                  const xtgrad::Mask& masked, float scale, const xtgrad::Array& A,
                                  const xtgrad::Array& g);

// Optional, the intermediate of your derivation: dS, the gradient of the scores S (Lq, Lk). The
// grader checks it before dq and dk unless it returns Array() (0-d): then it is skipped.
xtgrad::Array scores_grad(const xtgrad::Array& v, const xtgrad::Array& A, const xtgrad::Array& g);

// The op (given): forward, and a node whose backward is attention_backward.
xtgrad::Tensor attention(const xtgrad::Tensor& q, const xtgrad::Tensor& k, const xtgrad::Tensor& v,
                         const xtgrad::Mask& masked, float scale);

}  // namespace ex04
