// The spiral data of lesson 5 (docs/learn/05_mlp_spiral.md), shared by the examples that train on
// it: 3 classes x 100 points; point i of class c lies at radius r = i / 100, angle c·4 + 4r + noise
// (σ 0.2, drawn from gen in row order, so a seed gives the lesson's numbers).
#pragma once

#include <xtgrad/xtgrad.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>

inline void make_spirals(xtgrad::Tensor& points, xtgrad::Ids& labels, xtgrad::Generator& gen) {
    const std::size_t per_class = 100, classes = 3;
    points = xtgrad::Tensor::zeros({per_class * classes, 2});
    labels = xtgrad::Ids::from_shape({per_class * classes});
    for (std::size_t c = 0; c < classes; ++c)
        for (std::size_t i = 0; i < per_class; ++i) {
            const float r = static_cast<float>(i) / per_class;
            const float t = static_cast<float>(c) * 4.f + 4.f * r + gen.normal(0.f, 0.2f);
            const std::size_t row = c * per_class + i;
            points.mutable_data()(row, 0) = r * std::sin(t);
            points.mutable_data()(row, 1) = r * std::cos(t);
            labels(row) = static_cast<std::int64_t>(c);
        }
}
