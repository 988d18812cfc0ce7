// The small helpers the micro-benchmarks share (vector_bench, matmul_primitive_probe,
// skinny_bench, ddp_bench, pool_wake_bench, cross_core_probe): a random buffer, a timed call,
// the time since a point, a median.
#pragma once

#include <xtgrad/random/random.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

namespace xtgrad::bench {

// n draws of N(0, 1) from a generator seeded with `seed`.
inline std::vector<float> randn_buffer(std::size_t n, std::uint64_t seed) {
    Generator g(seed);
    const Array a = randn({n}, g).data();
    return {a.begin(), a.end()};
}

// Wall-clock milliseconds of one call of f.
inline double ms_of(const std::function<void()>& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Microseconds since t0 on the steady clock.
inline double micros_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

// The middle value (the upper one of an even count); 0 for none.
inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace xtgrad::bench
