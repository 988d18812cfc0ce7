#include <xtgrad/nn/init.hpp>

#include <xtgrad/autograd/error.hpp>

#include <cmath>

namespace xtgrad::nn::init {

void uniform_(Tensor& t, double lo, double hi, Generator& gen) { fill_uniform(t.mutable_data().data(), t.numel(), lo, hi, gen); }

void normal_(Tensor& t, double mean, double stddev, Generator& gen) {
    fill_normal(t.mutable_data().data(), t.numel(), mean, stddev, gen);
}

void constant_(Tensor& t, float value) { t.mutable_data().fill(value); }

namespace {
// A gain the bounds are computed from: finite, >= 0, else the error names it
// rather than the bounds it would make.
void check_gain(const char* who, double gain) {
    if (!std::isfinite(gain) || gain < 0) fail("{}: gain must be a finite number >= 0, got {}", who, gain);
}
}  // namespace

std::pair<std::size_t, std::size_t> fans(const Tensor& w) {
    if (w.dim() < 2) fail("init: fan in/out need a weight with at least 2 dims, got {} for '{}'", shape_str(w.shape()), w.name());
    // torch: the product of the dims after the first two (a kernel's taps); 1 for a matrix.
    // Not numel / (out · in), which divides by zero for a weight with a zero dim.
    std::size_t receptive = 1;
    for (std::size_t d = 2; d < w.dim(); ++d) receptive *= w.size(static_cast<int>(d));
    return {w.size(1) * receptive, w.size(0) * receptive};
}

void xavier_uniform_(Tensor& t, double gain, Generator& gen) {
    check_gain("xavier_uniform_", gain);
    if (t.numel() == 0) return;  // as kaiming: nothing to draw (torch divides by a zero fan)
    const auto [fan_in, fan_out] = fans(t);
    const double stddev = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
    const double bound = std::sqrt(3.0) * stddev;
    uniform_(t, -bound, bound, gen);
}

void xavier_normal_(Tensor& t, double gain, Generator& gen) {
    check_gain("xavier_normal_", gain);
    if (t.numel() == 0) return;  // as kaiming: nothing to draw (torch divides by a zero fan)
    const auto [fan_in, fan_out] = fans(t);
    normal_(t, 0.0, gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out)), gen);
}

void kaiming_uniform_(Tensor& t, double a, Generator& gen) {
    if (!std::isfinite(a)) fail("kaiming_uniform_: the slope a must be finite, got {}", a);
    if (t.numel() == 0) return;  // torch: "Initializing zero-element tensors is a no-op" (no draw)
    const std::size_t fan_in = fans(t).first;
    if (fan_in == 0) fail("kaiming_uniform_: zero fan_in for a weight of shape {}", shape_str(t.shape()));
    const double gain = std::sqrt(2.0 / (1.0 + a * a));
    const double bound = std::sqrt(3.0) * (gain / std::sqrt(static_cast<double>(fan_in)));
    uniform_(t, -bound, bound, gen);
}

void default_weight_init_(Tensor& weight, Generator& gen) { kaiming_uniform_(weight, std::sqrt(5.0), gen); }

void default_bias_init_(Tensor& bias, std::size_t fan_in, Generator& gen) {
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    uniform_(bias, -bound, bound, gen);
}

}  // namespace xtgrad::nn::init
