// Exercise 10: forward mode with dual numbers (docs/learn/10_forward_mode.md).
#pragma once

#include <cstddef>
#include <vector>

namespace ex10 {

// value + tangent·ε with ε² = 0. Carried through a function, the tangent is the derivative of
// the value along the input's tangent: f(a + bε) = f(a) + f'(a) b ε.
struct Dual {
    double value = 0;
    double tangent = 0;
};

// Given (dual.cpp).
Dual operator+(Dual a, Dual b);
Dual operator-(Dual a, Dual b);
Dual constant(double c);  // a number that does not move: tangent 0

// Yours (exercise.cpp): each op's value and its tangent.
Dual operator*(Dual a, Dual b);
Dual operator/(Dual a, Dual b);
Dual exp(Dual a);
Dual log(Dual a);
Dual sin(Dual a);
Dual tanh(Dual a);

// Given (dual.cpp): a small network on duals, y_i = log(1 + exp(h_i)) / (1 + h_i h_i) with
// h = tanh(W x + b), W (m, n) row-major. The grader runs the same function on xtgrad's tensors.
std::vector<Dual> network(const std::vector<double>& w, const std::vector<double>& b, const std::vector<Dual>& x);

}  // namespace ex10
