// Exercise 00: write the numbers you get on paper. The test computes the same gradients with
// xtgrad's engine and says which of yours differ.
#include "exercise.hpp"

namespace ex00 {

Grads by_hand_mul_add() {
    Grads g;
    // TODO: g.da = ..., g.db = ..., g.dc = ... for L = a·b + c at a = 2, b = -3, c = 10.
    return g;
}

Grads by_hand_used_twice() {
    Grads g;
    // TODO: g.da = ..., g.db = ... for L = a·b + a at a = 2, b = -3.
    return g;
}

}  // namespace ex00
