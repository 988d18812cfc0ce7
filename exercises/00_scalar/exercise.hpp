// Exercise 00: gradients by hand, before the engine computes them (docs/learn/00_scalar.md).
#pragma once

namespace ex00 {

struct Grads {
    float da = 0, db = 0, dc = 0;
};

// L = (a + b)·c at a = 2, b = -3, c = 10: dL/da, dL/db, dL/dc.
Grads by_hand_sum_times();

// L = a·a·b at a = 2, b = -3 (a is used twice; there is no c, so dc = 0): dL/da, dL/db.
Grads by_hand_square_times();

}  // namespace ex00
