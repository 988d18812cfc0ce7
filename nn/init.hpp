// Initialisers (torch.nn.init) and PyTorch's default initialisation of each layer. The bounds
// are computed in double with torch's formulas and drawn as torch draws them, so a seed gives
// torch's weights (random/random.hpp, docs/random.md).
#pragma once

#include <xtgrad/random/random.hpp>
#include <xtgrad/autograd/tensor.hpp>

namespace xtgrad::nn::init {

void uniform_(Tensor& t, double lo, double hi, Generator& gen = default_generator());
void normal_(Tensor& t, double mean = 0.0, double stddev = 1.0, Generator& gen = default_generator());
void constant_(Tensor& t, float value);
// U(-b, b), b = gain * sqrt(3) * sqrt(2 / (fan_in + fan_out)); fans of a (out, in, k...) weight.
void xavier_uniform_(Tensor& t, double gain = 1.0, Generator& gen = default_generator());
// N(0, std²), std = gain * sqrt(2 / (fan_in + fan_out)).
void xavier_normal_(Tensor& t, double gain = 1.0, Generator& gen = default_generator());
// kaiming_uniform_(mode='fan_in', nonlinearity='leaky_relu'):
// U(-b, b), b = sqrt(3) * sqrt(2 / (1 + a^2)) / sqrt(fan_in).
void kaiming_uniform_(Tensor& t, double a = 0.0, Generator& gen = default_generator());
// torch's default for Linear and Conv1d weights: kaiming_uniform_(a = sqrt(5)), which is
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)); their biases then draw U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
void default_weight_init_(Tensor& weight, Generator& gen = default_generator());
void default_bias_init_(Tensor& bias, std::size_t fan_in, Generator& gen = default_generator());

// (fan_in, fan_out) of a weight (out, in, kernel...): in * receptive field, out * receptive field.
std::pair<std::size_t, std::size_t> fans(const Tensor& weight);

}  // namespace xtgrad::nn::init
