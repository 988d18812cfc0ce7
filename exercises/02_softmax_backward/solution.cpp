// Exercise 02, solved: dx = y ⊙ (g − ⟨g, y⟩) per row.
#include "exercise.hpp"

namespace ex02 {

using namespace xtgrad;

Array row_dots(const Array& y, const Array& g) {
    Array dots = xt::zeros<float>({y.shape(0)});
    for (std::size_t r = 0; r < y.shape(0); ++r) {
        double dot = 0;
        for (std::size_t i = 0; i < y.shape(1); ++i) dot += static_cast<double>(g(r, i)) * y(r, i);
        dots(r) = static_cast<float>(dot);
    }
    return dots;
}

Array softmax_backward(const Array& y, const Array& g) {
    Array dx = xt::zeros<float>(y.shape());
    const std::size_t rows = y.shape(0), cols = y.shape(1);
    for (std::size_t r = 0; r < rows; ++r) {
        double dot = 0;  // ⟨g, y⟩ of the row
        for (std::size_t i = 0; i < cols; ++i) dot += static_cast<double>(g(r, i)) * y(r, i);
        for (std::size_t k = 0; k < cols; ++k) dx(r, k) = y(r, k) * static_cast<float>(g(r, k) - dot);
    }
    return dx;
}

}  // namespace ex02
