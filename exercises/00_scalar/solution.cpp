// Exercise 00, solved.
#include "exercise.hpp"

namespace ex00 {

Grads by_hand_mul_add() {
    Grads g;
    g.da = -3;  // ∂(a·b)/∂a = b
    g.db = 2;   // ∂(a·b)/∂b = a
    g.dc = 1;   // ∂c/∂c = 1
    return g;
}

Grads by_hand_used_twice() {
    Grads g;
    g.da = -3 + 1;  // the sum over both uses of a: b from a·b, 1 from + a
    g.db = 2;
    return g;
}

}  // namespace ex00
