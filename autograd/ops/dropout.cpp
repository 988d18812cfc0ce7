// Inverted dropout: training keeps each element with probability 1 - p and scales it by
// 1 / (1 - p), so eval mode is the identity and the expected activation is unchanged.
#include "autograd/ops.hpp"
#include "autograd/ops/saved.hpp"
#include "autograd/random.hpp"

#include <cstdint>
#include <memory>
#include <random>
#include <type_traits>
#include <vector>

namespace xtgrad {

Tensor dropout(const Tensor& a, float p, bool training, Generator& gen) {
    detail::require_defined(a, "dropout", "the input");
    if (!(p >= 0.f && p <= 1.f)) fail("dropout: probability must be in [0, 1], got {}", p);
    if (!training || p == 0.f) return a;
    // What backward needs: one byte per element (1 = kept), a quarter of a float mask.
    auto kept = std::make_shared<std::vector<std::uint8_t>>(a.numel());
    const float keep = p == 1.f ? 0.f : 1.f / (1.f - p);
    // Drops exactly where std::bernoulli_distribution(p)(engine) would, ~3x faster (it was the
    // largest non-GEMM cost of a training forward, ~10 ns per element). That distribution
    // draws one 64-bit number u per element and drops when u / 2^64 < p (generate_canonical
    // <double>). u / 2^64 is formed from u's two 32-bit halves: each converts exactly and
    // their sum is rounded once, so it equals double(u), without the branch compilers emit
    // for an unsigned 64-bit conversion, which random bits mispredict every other element.
    using Engine = std::remove_reference_t<decltype(gen.engine())>;
    static_assert(Engine::min() == 0 && Engine::max() == ~std::uint64_t{0}, "a full-range 64-bit engine");
    const double p_drop = std::bernoulli_distribution(p).p();
    Engine& engine = gen.engine();
    std::uint8_t* m = kept->data();
    const std::size_t n = kept->size();
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t u = engine();
        const double hi = static_cast<double>(static_cast<std::uint32_t>(u >> 32)) * 0x1p32;
        const double r = (hi + static_cast<double>(static_cast<std::uint32_t>(u))) * 0x1p-64;
        m[i] = r < p_drop ? 0 : 1;
    }
    // x * 0 or x * 1/(1-p), as a float scale mask multiplied (bit for bit, -0 and NaN included).
    Array out = empty_array(a.shape());
    // __restrict: the byte mask could alias the floats for the compiler, which would not vectorise.
    const float* __restrict x = a.ptr();
    const std::uint8_t* __restrict mr = m;
    float* __restrict y = out.data();
    for (std::size_t i = 0; i < n; ++i) y[i] = x[i] * (mr[i] ? keep : 0.f);
    return make_result(std::move(out), "DropoutBackward", {a}, [kept, keep](Node& self, const Array& g) {
        Array dx = empty_array(shape_of(g));
        const std::uint8_t* __restrict mk = kept->data();
        const float* __restrict gi = g.data();
        float* __restrict d = dx.data();
        for (std::size_t i = 0, len = kept->size(); i < len; ++i) d[i] = gi[i] * (mk[i] ? keep : 0.f);
        self.accumulate(0, std::move(dx));
    });
}

}  // namespace xtgrad
