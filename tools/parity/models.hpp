// Whole models rebuilt from a fixture's config: shared by the module runners and the
// training runners, so each config mapping is written once.
#pragma once

#include <xtgrad/nn/tutorial_b/transformer.hpp>
#include <xtgrad/nn/tutorial_c/transformer.hpp>
#include "tools/parity/fixture.hpp"

#include <memory>

namespace xtgrad::parity {

std::shared_ptr<nn::tutorial_b::Transformer> build_transformer_b(const Fixture& f);
nn::tutorial_c::Config transformer_c_config(const Fixture& f);

}  // namespace xtgrad::parity
