// Initialisers (torch.nn.init) and PyTorch's default initialisation of each layer.
#pragma once

#include "autograd/random.hpp"
#include "autograd/tensor.hpp"

namespace xtgrad::nn::init {

void uniform_(Tensor& t, float lo, float hi, Generator& gen = default_generator());
void normal_(Tensor& t, float mean = 0.f, float stddev = 1.f, Generator& gen = default_generator());
void constant_(Tensor& t, float value);
// U(-b, b), b = gain * sqrt(6 / (fan_in + fan_out)); fans of a (out, in, k...) weight.
void xavier_uniform_(Tensor& t, float gain = 1.f, Generator& gen = default_generator());
// torch's default for Linear and Conv1d weights: kaiming_uniform_(a = sqrt(5)), which is
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)); their biases use the same bound.
void default_weight_init_(Tensor& weight, Generator& gen = default_generator());
void default_bias_init_(Tensor& bias, std::size_t fan_in, Generator& gen = default_generator());

// (fan_in, fan_out) of a weight (out, in, kernel...): in * receptive field, out * receptive field.
std::pair<std::size_t, std::size_t> fans(const Tensor& weight);

}  // namespace xtgrad::nn::init
