#include <xtgrad/random/random.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/simd/vector_kernels.hpp>
#include <xtgrad/threads/parallel.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

namespace xtgrad {

void Generator::seed(std::uint64_t s) {
    seed_ = s;
    engine_.seed(static_cast<std::uint32_t>(s));  // torch keeps the low 32 bits
    next_normal_.reset();
}

std::uint64_t Generator::random64() {
    const std::uint64_t hi = engine_();
    return (hi << 32) | engine_();
}

float Generator::uniform(float from, float to) { return uniform_from_word(engine_(), from, to); }

float Generator::uniform_from_word(std::uint32_t word, float from, float to) {
    const float x = static_cast<float>(word & 0xFFFFFFu) * 0x1p-24f;
    // One rounding, as torch's build computes x * (to - from) + from (contracted into an FMA):
    // the unfused form differs from torch's weights by up to hundreds of ulps near 0, and would
    // depend on whether the compiler contracts (it does at -O2, not at -O0 or under ASan).
    return std::fma(x, to - from, from);
}

double Generator::uniform_double() { return static_cast<double>(random64() & ((std::uint64_t{1} << 53) - 1)) * 0x1p-53; }

double Generator::normal_double(double mean, double stddev) {
    if (next_normal_) {
        const double cached = *next_normal_;
        next_normal_.reset();
        return cached * stddev + mean;
    }
    const double u1 = uniform_double();
    const double u2 = uniform_double();
    const double r = std::sqrt(-2.0 * std::log(1.0 - u2));
    const double theta = 2.0 * std::numbers::pi * u1;
    next_normal_ = r * std::sin(theta);
    return r * std::cos(theta) * stddev + mean;
}

Generator& default_generator() {
    thread_local Generator gen(0);
    return gen;
}

void manual_seed(std::uint64_t seed) { default_generator().seed(seed); }

void fill_uniform(float* data, std::size_t n, double from, double to, Generator& gen) {
    if (data == nullptr && n > 0) fail("fill_uniform: data is a null pointer, with {} floats to fill", n);
    // torch's checks: from <= to, both finite, and to - from a finite float (else every draw is
    // inf or NaN: lo + (hi - lo) · u overflows)
    constexpr double kFloatMax = std::numeric_limits<float>::max();
    if (!(from <= to) || !std::isfinite(from) || !std::isfinite(to) || !(to - from <= kFloatMax) ||
        std::abs(from) > kFloatMax || std::abs(to) > kFloatMax)
        fail("uniform_: expects finite from <= to with to - from at most float's largest ({}), got from={} to={}",
             kFloatMax, from, to);
    const float lo = static_cast<float>(from), hi = static_cast<float>(to);
    constexpr std::size_t chunk = 4096;  // numbers per bulk draw: 16 KiB of words, in L1
    alignas(64) std::uint32_t words[chunk];
    for (std::size_t i0 = 0; i0 < n; i0 += chunk) {
        const std::size_t m = std::min(chunk, n - i0);
        gen.engine().generate(words, m);
        for (std::size_t k = 0; k < m; ++k) data[i0 + k] = Generator::uniform_from_word(words[k], lo, hi);
    }
}

namespace {

// Box-Muller on 8 pairs (u[j], u[j + 8]) in place, as torch's normal_fill_16_AVX2: float
// steps, with log, cos and sin taken in double and rounded (torch uses float polynomials).
// d: (16,) uniforms in [0, 1) -> normals
void box_muller_16(float* d, float mean, float stddev) {
    constexpr float two_pi = static_cast<float>(2.0 * std::numbers::pi);
    for (int j = 0; j < 8; ++j) {
        const float u1 = 1.f - d[j];  // (0, 1] for the log
        const float radius = std::sqrt(-2.f * static_cast<float>(std::log(static_cast<double>(u1))));
        const float theta = two_pi * d[j + 8];
        const float c = static_cast<float>(std::cos(static_cast<double>(theta)));
        const float s = static_cast<float>(std::sin(static_cast<double>(theta)));
        d[j] = std::fma(radius * c, stddev, mean);
        d[j + 8] = std::fma(radius * s, stddev, mean);
    }
}

}  // namespace

void fill_normal(float* data, std::size_t n, double mean, double stddev, Generator& gen) {
    if (data == nullptr && n > 0) fail("fill_normal: data is a null pointer, with {} floats to fill", n);
    if (!(stddev >= 0.0) || !std::isfinite(stddev) || !std::isfinite(mean))
        fail("normal_: expects a finite mean and a finite std >= 0.0, got mean {} and std {}", mean, stddev);
    if (n < 16) {
        for (std::size_t i = 0; i < n; ++i) data[i] = static_cast<float>(gen.normal_double(mean, stddev));
        return;
    }
    const float m = static_cast<float>(mean), s = static_cast<float>(stddev);
    fill_uniform(data, n, 0.0, 1.0, gen);  // all n float uniforms first, as torch
    for (std::size_t i = 0; i + 16 <= n; i += 16) box_muller_16(data + i, m, s);
    if (n % 16 != 0) {
        float* tail = data + n - 16;
        for (int i = 0; i < 16; ++i) tail[i] = gen.uniform();
        box_muller_16(tail, m, s);
    }
}

namespace {

// data[i0 .. i1) from `engine`, positioned at element i0's first word: each element is the low 53
// bits of a random64 (two draws, the first the high half), kept when below `bound`.
void bernoulli_range(std::uint8_t* data, std::size_t i0, std::size_t i1, std::uint64_t bound, Mt19937& engine) {
    constexpr std::size_t chunk = 2048;  // elements per bulk draw: 16 KiB of words, in L1
    alignas(64) std::uint32_t words[2 * chunk];
    for (std::size_t i = i0; i < i1; i += chunk) {
        const std::size_t m = std::min(chunk, i1 - i);
        engine.generate(words, 2 * m);
        // words: (m, 2) = (high, low) halves of each element's random64 -> data[i .. i + m)
        vec::bernoulli_bytes(words, m, bound, data + i);
    }
}

// Below this many elements the draws stay on one thread: a second one first skips the words
// before its part, which costs ~1/4 of drawing them.
constexpr std::size_t kParallelDraws = std::size_t{1} << 16;

}  // namespace

void fill_bernoulli(std::uint8_t* data, std::size_t n, double p, Generator& gen) {
    if (data == nullptr && n > 0) fail("fill_bernoulli: data is a null pointer, with {} bytes to fill", n);
    if (!(p >= 0.0 && p <= 1.0)) fail("bernoulli_: expects 0 <= p <= 1, got {}", p);
    // torch keeps element i when u < p, u = r · 2^-53 with r the low 53 bits of random64 (two
    // draws, the first the high half). u is exact, so u < p ⇔ r < p · 2^53 ⇔ r < ceil(p · 2^53):
    // one integer compare per element on words drawn in bulk, the same mask bit for bit.
    const std::uint64_t bound = static_cast<std::uint64_t>(std::ceil(std::ldexp(p, 53)));
    const std::size_t parts = static_cast<std::size_t>(num_threads());
    if (parts == 1 || n < kParallelDraws) return bernoulli_range(data, 0, n, bound, gen.engine());
    // One stream, torch's order, cut into a part per thread: part c starts from a copy of the
    // engine advanced past the 2 · (its first element) words before it (discard: the twist
    // without the tempering), so the mask is the same for any thread count, and the engine ends
    // where the last part's copy ended. Dropout on seed-b's attention weights draws ~350 M
    // elements a step; on one core the other one waited.
    std::vector<Mt19937> engines(parts, gen.engine());
    parallel_for(parts, 1, [&](std::size_t c0, std::size_t c1) {
        for (std::size_t c = c0; c < c1; ++c) {
            const std::size_t i0 = n * c / parts, i1 = n * (c + 1) / parts;
            engines[c].discard(2 * static_cast<unsigned long long>(i0));
            bernoulli_range(data, i0, i1, bound, engines[c]);
        }
    });
    gen.engine() = engines.back();
}

Tensor randn(const Shape& shape, Generator& gen, bool requires_grad) {
    Array a = empty_array(shape);
    fill_normal(a.data(), a.size(), 0.0, 1.0, gen);
    return Tensor(std::move(a), requires_grad);
}

Tensor rand(const Shape& shape, Generator& gen, float lo, float hi, bool requires_grad) {
    Array a = empty_array(shape);
    fill_uniform(a.data(), a.size(), lo, hi, gen);
    return Tensor(std::move(a), requires_grad);
}

Ids randint(const Shape& shape, std::int64_t lo, std::int64_t hi, Generator& gen) {
    if (hi <= lo) fail("randint: empty range [{}, {})", lo, hi);
    checked_numel(shape, "randint");  // a count that wraps would give ids of that shape over no storage
    Ids ids = Ids::from_shape(shape);
    const std::uint64_t range = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
    const bool wide = range >= (std::uint64_t{1} << 32);
    for (auto& v : ids) {
        const std::uint64_t r = wide ? gen.random64() : gen.random();
        v = static_cast<std::int64_t>(r % range + static_cast<std::uint64_t>(lo));
    }
    return ids;
}

}  // namespace xtgrad
