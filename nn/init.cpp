#include "nn/init.hpp"

#include "autograd/error.hpp"

#include <cmath>

namespace xtgrad::nn::init {

void uniform_(Tensor& t, float lo, float hi, Generator& gen) {
    for (float& v : t.data()) v = gen.uniform(lo, hi);
}

void normal_(Tensor& t, float mean, float stddev, Generator& gen) {
    for (float& v : t.data()) v = gen.normal(mean, stddev);
}

void constant_(Tensor& t, float value) { t.data().fill(value); }

std::pair<std::size_t, std::size_t> fans(const Tensor& w) {
    if (w.dim() < 2) fail("init: fan in/out need a weight with at least 2 dims, got {} for '{}'", shape_str(w.shape()), w.name());
    const std::size_t receptive = w.numel() / (w.size(0) * w.size(1));
    return {w.size(1) * receptive, w.size(0) * receptive};
}

void xavier_uniform_(Tensor& t, float gain, Generator& gen) {
    const auto [fan_in, fan_out] = fans(t);
    const float bound = gain * std::sqrt(6.f / static_cast<float>(fan_in + fan_out));
    uniform_(t, -bound, bound, gen);
}

void default_weight_init_(Tensor& weight, Generator& gen) {
    const float bound = 1.f / std::sqrt(static_cast<float>(fans(weight).first));
    uniform_(weight, -bound, bound, gen);
}

void default_bias_init_(Tensor& bias, std::size_t fan_in, Generator& gen) {
    const float bound = fan_in > 0 ? 1.f / std::sqrt(static_cast<float>(fan_in)) : 0.f;
    uniform_(bias, -bound, bound, gen);
}

}  // namespace xtgrad::nn::init
