// Exercise 02: softmax's backward without its Jacobian (docs/learn/02_softmax.md).
#pragma once

#include <xtgrad/xtgrad.hpp>

namespace ex02 {

// y: softmax of each row of x (rows, cols); g: the gradient of y. Returns dx (rows, cols).
xtgrad::Array softmax_backward(const xtgrad::Array& y, const xtgrad::Array& g);

// Optional, the intermediate quantity of your derivation: the number step 2 of the lesson asks
// you to name, one per row, shape (rows). The grader checks it unless it returns Array() (0-d):
// then it is skipped.
xtgrad::Array row_dots(const xtgrad::Array& y, const xtgrad::Array& g);

// Softmax over the last axis of a 2-D x, as an op whose backward is softmax_backward (given).
xtgrad::Tensor softmax_rows(const xtgrad::Tensor& x);

}  // namespace ex02
