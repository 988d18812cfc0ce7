// What the attention op tests share (tests/ops/attention_test.cpp, tests/ops/attention_heads_test.cpp).
#pragma once

#include "tests/test_util.hpp"

#include <cstddef>

namespace xtgrad::test {

// (B, 1, Lq, Lk): query i of batch b does not see key j when (i + j + b) % 3 == 0, except key 1,
// which every query sees (no row is fully masked).
inline Mask some_masked(std::size_t B, std::size_t Lq, std::size_t Lk) {
    Mask m = Mask::from_shape({B, 1, Lq, Lk});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t i = 0; i < Lq; ++i)
            for (std::size_t j = 0; j < Lk; ++j) m(b, 0, i, j) = j != 1 && (i + j + b) % 3 == 0;
    return m;
}

}  // namespace xtgrad::test
