// "init" fixtures (tools/make_rng_fixtures.py): the trainable parameters PyTorch's model holds
// right after torch.manual_seed(seed), against xtgrad's model built after manual_seed(seed).
#pragma once

#include "tools/parity/fixture.hpp"

namespace xtgrad::parity {

// Exact, except the ulps meta.json allows per file (torch's AVX2 normal_ fill).
void check_init(const Fixture& f, const Builder& build, Report& r);

}  // namespace xtgrad::parity
