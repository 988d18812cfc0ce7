// Exercise 03, solved: dx = (h − mean(h)) / D − u · Σ_i h_i u_i / (D² (d − 1) s), h = g ⊙ γ
// (docs/derivations.md, "Tutorial A's LayerNorm").
#include "exercise.hpp"

#include <cmath>
#include <vector>

namespace ex03 {

using namespace xtgrad;

Array row_sums(const Array& x, const Array& gamma, const Array& g) {
    const std::size_t rows = x.shape(0), d = x.shape(1);
    Array out = xt::zeros<float>({rows, std::size_t{2}});
    for (std::size_t r = 0; r < rows; ++r) {
        double mu = 0, h_mean = 0, hu = 0;
        for (std::size_t i = 0; i < d; ++i) mu += x(r, i) / static_cast<double>(d);
        for (std::size_t i = 0; i < d; ++i) {
            const double h = static_cast<double>(g(r, i)) * gamma(i);
            h_mean += h / static_cast<double>(d);
            hu += h * (x(r, i) - mu);
        }
        out(r, 0) = static_cast<float>(h_mean);
        out(r, 1) = static_cast<float>(hu);
    }
    return out;
}

LayerNormGrads layer_norm_a_backward(const Array& x, const Array& gamma, const Array& g, float eps) {
    const std::size_t rows = x.shape(0), d = x.shape(1);
    LayerNormGrads out{xt::zeros<float>(x.shape()), xt::zeros<float>({d}), xt::zeros<float>({d})};
    std::vector<double> u(d), h(d);
    for (std::size_t r = 0; r < rows; ++r) {
        double mu = 0, ss = 0;
        for (std::size_t i = 0; i < d; ++i) mu += x(r, i);
        mu /= static_cast<double>(d);
        for (std::size_t i = 0; i < d; ++i) u[i] = x(r, i) - mu, ss += u[i] * u[i];
        const double s = std::sqrt(ss / static_cast<double>(d - 1)), D = s + eps;
        double h_mean = 0, hu = 0;
        for (std::size_t i = 0; i < d; ++i) {
            out.dgamma(i) += static_cast<float>(g(r, i) * u[i] / D);
            out.dbeta(i) += g(r, i);
            h[i] = static_cast<double>(g(r, i)) * gamma(i);
            h_mean += h[i] / static_cast<double>(d);
            hu += h[i] * u[i];
        }
        // the std's own derivative, u / ((d − 1) s), is 0 on a constant row (u = 0, s = 0), not 0/0
        const double through_std = s > 0 ? hu / (D * D * static_cast<double>(d - 1) * s) : 0.0;
        for (std::size_t k = 0; k < d; ++k) out.dx(r, k) = static_cast<float>((h[k] - h_mean) / D - u[k] * through_std);
    }
    return out;
}

}  // namespace ex03
