// Exercise 04: attention's backward, in the order the engine would run the composition:
//   out = A v        ->  dA and dv
//   A = softmax(S)   ->  dS (exercise 02's formula, per row)
//   S[masked] = −∞   ->  what happens to dS there? (look at A where masked)
//   S = q kᵀ · scale ->  dq and dk
// Plain loops are fine: the arrays are small. Index them as q(i, j).
#include "exercise.hpp"

namespace ex04 {

using namespace xtgrad;

Array scores_grad(const Array& v, const Array& A, const Array& g) {
    // Optional: dS (Lq, Lk), graded before dq and dk if you return it. Left as Array() (0-d), it
    // is skipped.
    (void)v;
    (void)A;
    (void)g;
    return Array();
}

AttentionGrads attention_backward(const Array& q, const Array& k, const Array& v, const Mask& masked, float scale,
                                  const Array& A, const Array& g) {
    AttentionGrads out{xt::zeros<float>(q.shape()), xt::zeros<float>(k.shape()), xt::zeros<float>(v.shape())};
    // TODO 1: dv and dA, from out = A v (check the shapes: dv is (Lk, dv), dA is (Lq, Lk)).
    // TODO 2: dS, from A = softmax(S) row by row (exercise 02's rule, with dA as its g).
    // TODO 3: dq and dk, from S = q kᵀ · scale.
    (void)masked;
    (void)scale;
    (void)A;
    (void)g;
    return out;
}

}  // namespace ex04
