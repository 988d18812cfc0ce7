// Runners for tutorial B's modules (FORMAT.md section 14).
#include "tools/parity/module_runner.hpp"
#include "tools/parity/register_all.hpp"

namespace xtgrad::parity {

void register_tutorial_b_runners() {}

}  // namespace xtgrad::parity
