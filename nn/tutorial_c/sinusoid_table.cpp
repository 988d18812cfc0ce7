#include <xtgrad/nn/tutorial_c/sinusoid_table.hpp>

#include <xtgrad/autograd/error.hpp>

#include <cmath>

namespace xtgrad::nn::tutorial_c {

Tensor get_sinusoid_encoding_table(std::size_t n_position, std::size_t d_model) {
    if (n_position == 0 || d_model == 0)
        fail("tutorial_c::get_sinusoid_encoding_table: n_position and d_model must be positive, got {} and {}",
             n_position, d_model);
    Array table = empty_array({n_position, d_model});
    for (std::size_t j = 0; j < d_model; ++j) {
        // columns 2i and 2i+1 share the frequency 1 / 10000^(2i/d)
        const double denominator = std::pow(10000.0, 2.0 * static_cast<double>(j / 2) / static_cast<double>(d_model));
        for (std::size_t p = 0; p < n_position; ++p) {
            const double angle = static_cast<double>(p) / denominator;
            table(p, j) = static_cast<float>(j % 2 == 0 ? std::sin(angle) : std::cos(angle));
        }
    }
    return Tensor(std::move(table));
}

}  // namespace xtgrad::nn::tutorial_c
