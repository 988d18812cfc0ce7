// Exercise 00, solved.
#include "exercise.hpp"

namespace ex00 {

Grads by_hand_sum_times() {
    Grads g;
    g.da = 10;  // c: the sum passes the product's c to both of its inputs
    g.db = 10;
    g.dc = -1;  // a + b
    return g;
}

Grads by_hand_square_times() {
    Grads g;
    g.da = 2 * 2 * -3;  // a·b from each of a's two uses, summed: 2ab
    g.db = 2 * 2;       // a·a
    return g;
}

}  // namespace ex00
