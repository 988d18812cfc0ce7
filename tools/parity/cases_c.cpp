// Runners for tutorial C's modules (FORMAT.md section 14).
#include "tools/parity/module_runner.hpp"
#include "tools/parity/register_all.hpp"

namespace xtgrad::parity {

void register_tutorial_c_runners() {}

}  // namespace xtgrad::parity
