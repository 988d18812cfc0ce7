// relu then dropout as one node: the feed-forward's hidden layer, linear2(dropout(relu(h))), makes
// and reads relu's output once instead of writing it, reading it back and keeping a bit of each;
// backward likewise takes dropout's and relu's gradients in one pass. Values, gradients, the
// dropout draws and the second-order and forward-mode rules are the composition's, bit for bit
// (tests/ops/relu_dropout_test.cpp).
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/autograd/ops/common.hpp>
#include <xtgrad/autograd/ops/dropout.hpp>
#include <xtgrad/autograd/forward_ad.hpp>

#include <bit>
#include <cstdint>
#include <vector>

namespace xtgrad {

Tensor relu_dropout(const Tensor& a, float p, bool training, Generator& gen) {
    detail::require_defined(a, "relu_dropout", "the input");
    check_dropout_probability(p, "relu_dropout");
    if (!training || p == 0.f) return relu(a);  // dropout is the identity there
    DropoutMask drawn = draw_dropout_mask(a.shape(), p, gen);
    const float keep = drawn.keep;
    // x, y: (n); m: (n) bytes, 1 where kept. y = relu(x) · (m · keep), relu's and dropout's own
    // expressions in their order, so the bits (-0 and NaN included) are the composition's.
    Array out = empty_array(a.shape());
    const float* __restrict x = a.ptr();
    const std::uint8_t* __restrict m = reinterpret_cast<const std::uint8_t*>(drawn.kept.data());
    float* __restrict y = out.data();
    const auto apply_at = [x, m, y, keep](std::size_t i) {
        const float r = x[i] <= 0.f ? 0.f : x[i];
        y[i] = r * (static_cast<float>(m[i]) * keep);
    };
    std::vector<SavedRecord> saved;
    if (records_graph({a})) {
        // relu's bit (its output was positive: x > 0, NaN not) and dropout's (kept), in the same pass
        BitMask positive(a.shape()), kept(a.shape());
        write_and_pack_bits(std::array<BitMask*, 2>{&positive, &kept}, apply_at,
                            [x](std::size_t i) { return x[i] > 0.f; }, [m](std::size_t i) { return m[i] != 0; });
        saved.push_back({"result_positive", std::move(positive)});
        saved.push_back({"mask", std::move(kept)});
    } else {
        parallel_rows(out.size(), 1, [&](std::size_t i0, std::size_t i1) {
            for (std::size_t i = i0; i < i1; ++i) apply_at(i);
        });
    }
    Tensor r = differentiable(make_result(
        std::move(out), "ReluDropoutBackward", {a}, std::move(saved),
        [keep](Node& self, const Array& g) {
            // dx = (g · (kept · keep)) where relu's output was positive, else 0: dropout's backward,
            // then relu's select (a NaN g gives 0 where relu cut), as the two nodes would
            const BitMask& positive = self.saved_bits("result_positive");
            const BitMask& kept = self.saved_bits("mask");
            self.grad_out(0, shape_of(g)).write([&](float* dx, auto store) {
                const float* __restrict gi = g.data();
                float* __restrict d = dx;
                for_each_bit(std::array<const BitMask*, 2>{&positive, &kept}, [&, keep](std::size_t i, float on, float in) {
                    const float gd = gi[i] * (in * keep);
                    // on ? gd : +0 as a bit mask: GCC sinks the product into a `?:` and then will
                    // not vectorise a product under a condition (it was 9 % of seed-d's step)
                    const std::uint32_t all = 0u - static_cast<std::uint32_t>(on != 0.f);
                    store(d[i], std::bit_cast<float>(std::bit_cast<std::uint32_t>(gd) & all));
                });
            });
        }),
        // in ops (create_graph): dropout's rule, then relu's, as the composition differentiates
        [keep](const Node& self, const Tensor& g) -> Grads {
            return {mul(mul(g, mul(self.saved_constant("mask"), keep)), self.saved_constant("result_positive"))};
        });
    return detail::with_jvp(r, {&a}, [&](const detail::Tangents& t) {  // relu's tangent rule, then dropout's
        const Tensor positive(Array(xt::where(a.data() > 0.f, 1.f, 0.f)));
        return mul(mul(t[0], positive), Tensor(Array(xt::cast<float>(drawn.kept) * keep)));
    });
}

}  // namespace xtgrad
