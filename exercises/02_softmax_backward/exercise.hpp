// Exercise 02: softmax's backward without its Jacobian (docs/learn/02_softmax.md).
#pragma once

#include <xtgrad/xtgrad.hpp>

namespace ex02 {

// y: softmax of each row of x (rows, cols); g: the gradient of y. Returns dx (rows, cols).
xtgrad::Array softmax_backward(const xtgrad::Array& y, const xtgrad::Array& g);

// Softmax over the last axis of a 2-D x, as an op whose backward is softmax_backward (given).
xtgrad::Tensor softmax_rows(const xtgrad::Tensor& x);

}  // namespace ex02
