// Exercise 00: write the numbers you get on paper. The test computes the same gradients with
// xtgrad's engine and says which of yours differ (and what it expected: work them out first).
#include "exercise.hpp"

namespace ex00 {

Grads by_hand_sum_times() {
    Grads g;
    // TODO: g.da = ..., g.db = ..., g.dc = ... for L = (a + b)·c at a = 2, b = -3, c = 10.
    return g;
}

Grads by_hand_square_times() {
    Grads g;
    // TODO: g.da = ..., g.db = ... for L = a·a·b at a = 2, b = -3.
    return g;
}

}  // namespace ex00
