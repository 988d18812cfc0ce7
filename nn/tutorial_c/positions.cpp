#include <xtgrad/nn/tutorial_c/positions.hpp>

#include <xtgrad/autograd/error.hpp>

namespace xtgrad::nn::tutorial_c {

Ids positions(const Ids& seq, PositionScheme scheme, Side side) {
    if (seq.dimension() != 2) fail("tutorial_c::positions: seq must be (batch, len) ids, got {}", shape_str(seq.shape()));
    const std::size_t B = seq.shape(0), L = seq.shape(1);
    Ids pos = Ids::from_shape({B, L});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < L; ++t) {
            const auto step = static_cast<std::int64_t>(t + 1);
            if (scheme == PositionScheme::sequential)
                pos(b, t) = seq(b, t) == 0 ? 0 : step;
            else if (side == Side::encoder)
                pos(b, t) = t + 1 < L ? step : 0;  // [1, 2, ..., L-1, 0]
            else
                pos(b, t) = t == 0 ? static_cast<std::int64_t>(L) : static_cast<std::int64_t>(t);  // [L, 1, ..., L-1]
        }
    return pos;
}

}  // namespace xtgrad::nn::tutorial_c
