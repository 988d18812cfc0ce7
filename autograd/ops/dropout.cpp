// Inverted dropout: training keeps each element with probability 1 - p and scales it by
// 1 / (1 - p), so eval mode is the identity and the expected activation is unchanged.
#include <xtgrad/autograd/ops/dropout.hpp>
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/autograd/ops/common.hpp>
#include <xtgrad/threads/parallel.hpp>
#include <xtgrad/random/random.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace xtgrad {

DropoutMask draw_dropout_mask(const Shape& shape, float p, Generator& gen) {
    // One byte per element (true = kept), as the bernoulli draws write them; dropout keeps a bit.
    Mask kept = Mask::from_shape(shape);
    static_assert(sizeof(bool) == 1, "the bernoulli draws write one byte per element");
    std::uint8_t* bytes = reinterpret_cast<std::uint8_t*>(kept.data());  // 0 or 1: valid bools
    // torch 1.13 on the CPU: noise.bernoulli_(1 - p) (one double uniform per element, kept
    // when it is < 1 - p), then noise / (1 - p) in float. p is taken back to the decimal it
    // was written as (0.1f -> 0.1), so 1 - p is the double torch computes from a Python float.
    const double p_decimal = std::stod(fmt::format("{}", p));
    if (p < 1.f) fill_bernoulli(bytes, kept.size(), 1.0 - p_decimal, gen);  // p = 1: no draws, as torch
    else std::fill(kept.begin(), kept.end(), false);
    const float keep = p == 1.f ? 0.f : 1.f / static_cast<float>(1.0 - p_decimal);
    return {std::move(kept), keep};
}

void check_dropout_probability(float p, const char* op) {
    if (!(p >= 0.f && p <= 1.f)) fail("{}: probability must be in [0, 1], got {}", op, p);
}

Tensor dropout(const Tensor& a, float p, bool training, Generator& gen) {
    detail::require_defined(a, "dropout", "the input");
    check_dropout_probability(p, "dropout");
    if (!training || p == 0.f) return a;
    DropoutMask drawn = draw_dropout_mask(a.shape(), p, gen);
    Mask kept = std::move(drawn.kept);
    const float keep = drawn.keep;
    const std::uint8_t* m = reinterpret_cast<const std::uint8_t*>(kept.data());
    const std::size_t n = kept.size();
    // x * 0 or x * 1/(1-p), as a float scale mask multiplied (bit for bit, -0 and NaN included).
    Array out = empty_array(a.shape());
    // __restrict: the byte mask could alias the floats for the compiler, which would not vectorise.
    const float* __restrict x = a.ptr();
    const std::uint8_t* __restrict mr = m;
    float* __restrict y = out.data();
    // The draws above stay sequential (torch's order, so masks equal torch's); applying the mask
    // is split over xtgrad's pool (element ranges, or whole words where the bits are packed too),
    // the same result for any thread count.
    // The scale is the mask byte (0 or 1) times keep: 0 or keep exactly, as a select would give,
    // but branch-free, so the loop vectorises; a branch on random bits mispredicts p of the time
    // (the branchy loop took ~1 ns per element, a tenth of seed-d's bf16 step in dropout).
    const auto apply_at = [x, mr, y, keep](std::size_t i) { y[i] = x[i] * (static_cast<float>(mr[i]) * keep); };
    // Backward keeps a bit per element (the byte mask above is freed on return), packed in the
    // same pass over the bytes.
    std::vector<SavedRecord> saved;
    if (records_graph({a})) {
        BitMask kept_bits(a.shape());
        write_and_pack_bits(kept_bits, apply_at, [mr](std::size_t i) { return mr[i] != 0; });
        saved.push_back({"mask", std::move(kept_bits)});
    } else {
        parallel_rows(n, 1, [&](std::size_t i0, std::size_t i1) {
            for (std::size_t i = i0; i < i1; ++i) apply_at(i);
        });
    }
    return detail::with_jvp(differentiable(
        make_result(std::move(out), "DropoutBackward", {a}, std::move(saved),
                    [keep](Node& self, const Array& g) {
                        // dx = g * (kept ? 1/(1-p) : 0), all (n), branch-free as forward
                        const BitMask& mask = self.saved_bits("mask");
                        self.grad_out(0, shape_of(g)).write([&](float* dx, auto store) {
                            const float* __restrict gi = g.data();
                            float* __restrict d = dx;
                            for_each_bit(mask, [&, keep](std::size_t i, float on) { store(d[i], gi[i] * (on * keep)); });
                        });
                    }),
        [keep](const Node& self, const Tensor& g) -> Grads { return {mul(g, mul(self.saved_constant("mask"), keep))}; }),
        // jvp: the tangent through the same mask and scale
        {&a}, [&](const detail::Tangents& t) { return mul(t[0], Tensor(Array(xt::cast<float>(kept) * keep))); });
}

}  // namespace xtgrad
