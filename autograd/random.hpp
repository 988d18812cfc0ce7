// Generator: a seedable random source (std::mt19937_64). Ops that draw (dropout, init) take
// a Generator; modules default to default_generator(), which manual_seed() reseeds (as
// torch.manual_seed). Values are reproducible across runs, not equal to torch's.
#pragma once

#include "autograd/tensor.hpp"

#include <cstdint>
#include <random>
#include <vector>

namespace xtgrad {

class Generator {
public:
    explicit Generator(std::uint64_t seed = 0) : engine_(seed) {}
    void seed(std::uint64_t s) { engine_.seed(s); }
    float uniform(float lo = 0.f, float hi = 1.f) { return std::uniform_real_distribution<float>(lo, hi)(engine_); }
    float normal(float mean = 0.f, float stddev = 1.f) { return std::normal_distribution<float>(mean, stddev)(engine_); }
    std::mt19937_64& engine() { return engine_; }

    // The whole state as opaque bytes (torch.Generator.get_state / set_state), for
    // checkpoints: set_state(state()) continues the same sequence. The format belongs to
    // the engine and may change with it; set_state throws an Error on bytes it cannot read.
    std::vector<std::uint8_t> state() const;
    void set_state(const std::vector<std::uint8_t>& bytes);

private:
    std::mt19937_64 engine_;
};

// The process-wide default generator (per thread) and torch.manual_seed's equivalent.
Generator& default_generator();
void manual_seed(std::uint64_t seed);

Tensor randn(const Shape& shape, Generator& gen, bool requires_grad = false);
Tensor rand(const Shape& shape, Generator& gen, float lo = 0.f, float hi = 1.f, bool requires_grad = false);
// Ids drawn uniformly from [lo, hi).
Ids randint(const Shape& shape, std::int64_t lo, std::int64_t hi, Generator& gen);

}  // namespace xtgrad
