// Exercise 10's given parts: the linear rules, and a network made of your rules.
#include "exercise.hpp"

namespace ex10 {

Dual operator+(Dual a, Dual b) { return {a.value + b.value, a.tangent + b.tangent}; }
Dual operator-(Dual a, Dual b) { return {a.value - b.value, a.tangent - b.tangent}; }
Dual constant(double c) { return {c, 0}; }

std::vector<Dual> network(const std::vector<double>& w, const std::vector<double>& b, const std::vector<Dual>& x) {
    const std::size_t n = x.size(), m = b.size();
    std::vector<Dual> y(m);
    for (std::size_t i = 0; i < m; ++i) {
        Dual s = constant(b[i]);
        for (std::size_t j = 0; j < n; ++j) s = s + constant(w[i * n + j]) * x[j];
        const Dual h = tanh(s);
        y[i] = log(constant(1) + exp(h)) / (constant(1) + h * h);
    }
    return y;
}

}  // namespace ex10
