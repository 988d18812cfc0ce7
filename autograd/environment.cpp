#include <xtgrad/autograd/environment.hpp>

#include <xtgrad/autograd/debug.hpp>
#include <xtgrad/autograd/engine.hpp>
#include <xtgrad/autograd/malloc_tuning.hpp>
#include <xtgrad/autograd/speed_switches.hpp>
#include <xtgrad/gemm/gemm_backend.hpp>
#include <xtgrad/gemm/gemm_profile.hpp>
#include <xtgrad/simd/cpu_isa.hpp>

namespace xtgrad {

// Each reader throws its own Error for a bad value; the ones read once and kept (the trace, the
// ISA, the profile, the break filter) are read here for good, the speed switches again.
void check_environment() {
    (void)trace_enabled();
    (void)active_isa();
    (void)gemm_profiling();
    (void)detail::active_backend();
    debug::check_break_environment();
    for (const detail::EnvSwitch* s : detail::kSpeedSwitches)
        if (s == &detail::kMallocNoFastbinsSwitch)
            detail::check_malloc_tuning();  // read at load: that value, not the environment's now
        else
            (void)detail::read_switch(*s);
}

}  // namespace xtgrad
