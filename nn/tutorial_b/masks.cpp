#include <xtgrad/nn/tutorial_b/masks.hpp>

#include <xtgrad/autograd/error.hpp>

namespace xtgrad::nn::tutorial_b {

Masks generate_mask(const Ids& src, const Ids& tgt) {
    if (src.dimension() != 2 || tgt.dimension() != 2)
        fail("tutorial_b::generate_mask: src and tgt must be (batch, len) ids, got src {} and tgt {}",
             shape_str(src.shape()), shape_str(tgt.shape()));
    const std::size_t B = src.shape(0), Ls = src.shape(1), Bt = tgt.shape(0), Lt = tgt.shape(1);
    Masks m{Mask::from_shape({B, 1, 1, Ls}), Mask::from_shape({Bt, 1, Lt, Lt})};
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t j = 0; j < Ls; ++j) m.src_mask(b, 0, 0, j) = src(b, j) != 0;
    for (std::size_t b = 0; b < Bt; ++b)
        for (std::size_t i = 0; i < Lt; ++i)      // query position
            for (std::size_t j = 0; j < Lt; ++j)  // key position
                m.tgt_mask(b, 0, i, j) = tgt(b, i) != 0 && j <= i;
    return m;
}

}  // namespace xtgrad::nn::tutorial_b
