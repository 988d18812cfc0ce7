// The same-seed fixtures of tools/make_rng_fixtures.py (tests/fixtures/rng, docs/random.md):
//   kind "init"       the trainable parameters PyTorch's model holds right after
//                     torch.manual_seed(seed), against xtgrad's model built after manual_seed(seed)
//   kind "train_log"  tutorial B's random-data training run with dropout: the loss of each
//                     step against PyTorch's, within 1e-4
#pragma once

#include "tools/parity/fixture.hpp"

namespace xtgrad::parity {

// Exact, except the ulps meta.json allows per file (torch's AVX2 normal_ fill).
void check_init(const Fixture& f, const Builder& build, Report& r);
// The whole run from manual_seed(seed): model, randint data, dropout masks, Adam steps.
void check_train_log(const Fixture& f, Report& r);

}  // namespace xtgrad::parity
