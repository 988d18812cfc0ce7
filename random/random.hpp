// Generator: PyTorch 1.13's CPU generator, number for number. torch.manual_seed(s) and
// xtgrad::manual_seed(s) give the same weights, data and dropout masks (docs/random.md).
// Ops that draw (dropout, init) take a Generator; modules default to default_generator().
//
// What torch does (ATen's CPUGeneratorImpl, DistributionsHelper.h, TransformationHelper.h,
// native/cpu/DistributionTemplates.h), reproduced here:
//   engine      mt19937 (32-bit outputs) seeded with the seed's low 32 bits
//   random64    two draws, the first is the high half
//   float U     the low 24 bits of one draw * 2^-24, then x * (to - from) + from in float
//   double U    the low 53 bits of random64 * 2^-53
//   normal      a float tensor of >= 16 elements: normal_fill (below); fewer: Box-Muller on
//               two double uniforms, caching the sine half for the next call
//   randint     one draw (random64 when the range is >= 2^32) modulo the range, plus low
//   bernoulli   double U < p (dropout keeps an element when U < 1 - p)
#pragma once

#include <xtgrad/random/mt19937.hpp>
#include <xtgrad/autograd/tensor.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace xtgrad {

class Generator {
public:
    explicit Generator(std::uint64_t seed = 0) { this->seed(seed); }
    // torch.manual_seed: reseeds the engine and forgets the cached normal.
    void seed(std::uint64_t s);
    std::uint64_t initial_seed() const { return seed_; }

    std::uint32_t random() { return engine_(); }
    std::uint64_t random64();
    // at::uniform_real_distribution<float>(from, to), one 32-bit draw.
    float uniform(float from = 0.f, float to = 1.f);
    // The same number from an engine output drawn elsewhere (the bulk fills).
    static float uniform_from_word(std::uint32_t word, float from, float to);
    // at::uniform_real_distribution<double>(0, 1), one random64.
    double uniform_double();
    // at::normal_distribution<double>: Box-Muller, the second value cached for the next call.
    double normal_double(double mean = 0.0, double stddev = 1.0);
    float normal(float mean = 0.f, float stddev = 1.f) { return static_cast<float>(normal_double(mean, stddev)); }
    // The raw engine (std::mt19937's numbers, with a bulk generate()), for std:: algorithms and
    // distributions (not torch's numbers) and for the bulk fills below.
    Mt19937& engine() { return engine_; }

    // The whole state as opaque bytes (torch.Generator.get_state / set_state), for
    // checkpoints: set_state(state()) continues the same sequence. The format belongs to
    // the engine and may change with it (random/generator_state.cpp: text with a checksum);
    // set_state throws an Error naming the field at fault, the generator unchanged, on bytes
    // that are not a state (a field that is not a plain number in its range, too few fields, a
    // check that does not match: a state cut or changed), bytes after the state, or an all-zero
    // Mersenne Twister state. States written by earlier builds (no check) still load.
    std::vector<std::uint8_t> state() const;
    void set_state(const std::vector<std::uint8_t>& bytes);

private:
    Mt19937 engine_;
    std::uint64_t seed_ = 0;
    std::optional<double> next_normal_;
};

// The process-wide default generator (per thread) and torch.manual_seed's equivalent.
Generator& default_generator();
void manual_seed(std::uint64_t seed);

// In-place fills of n contiguous floats, as torch's Tensor methods on a contiguous float tensor.
// A null data with n > 0 is an Error (n = 0 writes nothing: any pointer).
// uniform_(from, to): bounds rounded to float first, as torch does.
void fill_uniform(float* data, std::size_t n, double from, double to, Generator& gen);
// normal_(mean, std). n >= 16: all n float uniforms first, then Box-Muller on the pairs
// (j, j + 8) of each block of 16; when 16 does not divide n the last 16 are drawn again and
// recomputed. torch runs that block with AVX2 polynomial log/sin/cos; this scalar version
// matches it within 4 float ulps (exactly for most elements). n < 16: the double path, exact.
void fill_normal(float* data, std::size_t n, double mean, double stddev, Generator& gen);
// bernoulli_(p) on any tensor: element i is 1 when a double uniform is < p.
void fill_bernoulli(std::uint8_t* data, std::size_t n, double p, Generator& gen);

// torch.randn / torch.rand (rand(lo, hi) = torch.empty(shape).uniform_(lo, hi)).
Tensor randn(const Shape& shape, Generator& gen, bool requires_grad = false);
Tensor rand(const Shape& shape, Generator& gen, float lo = 0.f, float hi = 1.f, bool requires_grad = false);
// torch.randint(lo, hi, shape): ids drawn uniformly from [lo, hi).
Ids randint(const Shape& shape, std::int64_t lo, std::int64_t hi, Generator& gen);

}  // namespace xtgrad
