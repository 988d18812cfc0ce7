#include <xtgrad/autograd/gradient_consumer.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/node.hpp>
#include <xtgrad/autograd/speed_switches.hpp>
#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/simd/vector_kernels.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>

namespace xtgrad {

namespace {

std::atomic<std::size_t> consumed{0}, consumed_factored{0};

// The largest |p[i]|'s bits: for floats without their sign, integer order is value order, and
// NaN and ±Inf (exponent all ones) lie above every finite value. An integer max vectorises; a
// float one, whose NaN rules the compiler must keep, does not.
std::uint32_t max_abs_bits(const float* p, std::size_t n) {
    std::uint32_t most = 0;
    for (std::size_t i = 0; i < n; ++i) {
        std::uint32_t bits;
        std::memcpy(&bits, p + i, sizeof bits);
        most = std::max(most, bits & 0x7fffffffu);
    }
    return most;
}

}  // namespace

namespace detail {

bool product_provably_finite(const float* A, std::size_t a_size, const float* B, std::size_t b_size, int K,
                             std::size_t c_size) {
    if (a_size + b_size > c_size) return false;
    constexpr std::uint32_t kInfBits = 0x7f800000u;
    const std::uint32_t a = max_abs_bits(A, a_size), b = max_abs_bits(B, b_size);
    if (a >= kInfBits || b >= kInfBits) return false;
    const double bound = static_cast<double>(K) * static_cast<double>(std::bit_cast<float>(a)) *
                         static_cast<double>(std::bit_cast<float>(b));
    return bound < 0.5 * static_cast<double>(std::numeric_limits<float>::max());
}

std::size_t consumed_gradients() { return consumed.load(); }
std::size_t consumed_as_factors() { return consumed_factored.load(); }

}  // namespace detail

bool give_gradient_to_consumer(Node& self, std::size_t input, const Shape& shape, const std::function<bool()>& finite,
                               const std::function<void(float* out)>& write, const vec::RankKGradient* factors) {
    GradientConsumer* consumer = self.grad_consumer(input);
    if (consumer == nullptr || (consumer->needs_finite() && !finite())) return false;
    if (factors != nullptr) {
        std::size_t elements = 1;
        for (const std::size_t d : shape) elements *= d;
        if (factors->rows * factors->cols != elements)
            fail("{}: a gradient of shape {} handed over as a ({}, {}) product (an internal error)", self.op(),
                 shape_str(shape), factors->rows, factors->cols);
        if (detail::speed_switch_on(detail::kGradientAsFactorsSwitch) &&
            detail::product_on_skinny_tn_kernel(static_cast<int>(factors->rows), static_cast<int>(factors->cols),
                                                factors->rank) &&
            consumer->consume_product(*self.inputs()[input], *factors)) {
            consumed.fetch_add(1, std::memory_order_relaxed);
            consumed_factored.fetch_add(1, std::memory_order_relaxed);
            return true;
        }
    }
    auto gradient = std::make_shared<Array>(empty_array(shape));
    {
        const ResultReadAtOnce read_next;  // the step reads it at once: into cache, not streamed past it
        write(gradient->data());
    }
    consumer->consume(*self.inputs()[input], std::move(gradient));
    consumed.fetch_add(1, std::memory_order_relaxed);
    return true;
}

}  // namespace xtgrad
