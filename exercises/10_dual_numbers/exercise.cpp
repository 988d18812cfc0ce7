// Exercise 10: the forward-mode rule of each op. Expand f(a + a'ε), op by op, with ε² = 0, and
// keep the ε part: that is the tangent. The values are given; the tangents are yours.
#include "exercise.hpp"

#include <cmath>

namespace ex10 {

Dual operator*(Dual a, Dual b) {
    return {a.value * b.value, 0 /* TODO: the tangent of a product */};
}

Dual operator/(Dual a, Dual b) {
    return {a.value / b.value, 0 /* TODO */};
}

Dual exp(Dual a) {
    return {std::exp(a.value), 0 /* TODO */};
}

Dual log(Dual a) {
    return {std::log(a.value), 0 /* TODO */};
}

Dual sin(Dual a) {
    return {std::sin(a.value), 0 /* TODO */};
}

Dual tanh(Dual a) {
    return {std::tanh(a.value), 0 /* TODO */};
}

}  // namespace ex10
