// Generator: a seedable random source (std::mt19937_64). Keep one per model or per test;
// nothing in xtgrad draws from a hidden global generator.
#pragma once

#include "autograd/tensor.hpp"

#include <cstdint>
#include <random>

namespace xtgrad {

class Generator {
public:
    explicit Generator(std::uint64_t seed = 0) : engine_(seed) {}
    void seed(std::uint64_t s) { engine_.seed(s); }
    float uniform(float lo = 0.f, float hi = 1.f) { return std::uniform_real_distribution<float>(lo, hi)(engine_); }
    float normal(float mean = 0.f, float stddev = 1.f) { return std::normal_distribution<float>(mean, stddev)(engine_); }
    std::mt19937_64& engine() { return engine_; }

private:
    std::mt19937_64 engine_;
};

Tensor randn(const Shape& shape, Generator& gen, bool requires_grad = false);
Tensor rand(const Shape& shape, Generator& gen, float lo = 0.f, float hi = 1.f, bool requires_grad = false);
// Ids drawn uniformly from [lo, hi).
Ids randint(const Shape& shape, std::int64_t lo, std::int64_t hi, Generator& gen);

}  // namespace xtgrad
