// Exercise 10, solved: each tangent is the op's derivative times the input's tangent (the chain
// rule), summed over the inputs for two-input ops.
#include "exercise.hpp"

#include <cmath>

namespace ex10 {

Dual operator*(Dual a, Dual b) { return {a.value * b.value, a.tangent * b.value + a.value * b.tangent}; }

Dual operator/(Dual a, Dual b) {
    return {a.value / b.value, (a.tangent * b.value - a.value * b.tangent) / (b.value * b.value)};
}

Dual exp(Dual a) {
    const double e = std::exp(a.value);
    return {e, e * a.tangent};
}

Dual log(Dual a) { return {std::log(a.value), a.tangent / a.value}; }

Dual sin(Dual a) { return {std::sin(a.value), std::cos(a.value) * a.tangent}; }

Dual tanh(Dual a) {
    const double t = std::tanh(a.value);
    return {t, (1 - t * t) * a.tangent};
}

}  // namespace ex10
