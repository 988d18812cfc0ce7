// Runners for the optimizer and training fixtures (FORMAT.md sections 6 and 7).
#include "tools/parity/module_runner.hpp"
#include "tools/parity/register_all.hpp"

namespace xtgrad::parity {

void register_optim_runners() {}

}  // namespace xtgrad::parity
