// Exercise 05's data (given): examples/spiral's three spirals.
#include "exercise.hpp"

#include <cmath>

namespace ex05 {

using namespace xtgrad;

// 3 classes x 100 points; point i of class c lies at radius r, angle c·4 + 4r + noise.
void make_spirals(Tensor& points, Ids& labels, std::uint64_t seed) {
    const std::size_t per_class = 100, classes = 3;
    Generator gen(seed);
    Array p = xt::zeros<float>({per_class * classes, std::size_t{2}});
    labels = Ids::from_shape({per_class * classes});
    for (std::size_t c = 0; c < classes; ++c)
        for (std::size_t i = 0; i < per_class; ++i) {
            const float r = static_cast<float>(i) / per_class;
            const float t = static_cast<float>(c) * 4.f + 4.f * r + gen.normal(0.f, 0.2f);
            const std::size_t row = c * per_class + i;
            p(row, 0) = r * std::sin(t);
            p(row, 1) = r * std::cos(t);
            labels(row) = static_cast<std::int64_t>(c);
        }
    points = Tensor(std::move(p));
}

}  // namespace ex05
