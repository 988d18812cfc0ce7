#include <xtgrad/autograd/malloc_tuning.hpp>

#include <xtgrad/autograd/env_switch.hpp>
#include <xtgrad/autograd/speed_switches.hpp>

#include <malloc.h>

#include <cstdlib>
#include <string>

namespace xtgrad::detail {
namespace {

// Made while the library loads, before any of its allocations.
// - glibc hands blocks above its mmap threshold to fresh mmaps, so every large activation would pay
//   page faults on each training step (~1 µs a page under KVM, ~16 µs under the Zen 5s' PVM;
//   docs/performance.md, "What the numbers mean"). Freed memory stays in the process instead: mmap
//   and trim thresholds of 1 GiB. Tried and not kept: M_ARENA_MAX = 1 (seed-d 23 % slower).
// - XTGRAD_MALLOC_NO_FASTBINS (M_MXFAST 0): a step frees thousands of small blocks (a graph's
//   nodes, shapes, closures: ~13 K of at most 128 bytes per Winter Games step) past tcache's 7
//   per size into glibc's fastbins, and the next request of 1 KiB or more (an activation) first
//   merges every fastbin block back (malloc_consolidate), walking blocks all over the heap. With no
//   fastbins a freed block is merged when it is freed, beside its neighbours.
struct Tuning {
    SwitchValue value;    // XTGRAD_MALLOC_NO_FASTBINS as read at load
    std::string invalid;  // its text, where invalid: the Error quotes it, whatever the environment says later
    bool fastbins_off;
};
const Tuning tuning = [] {
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    const SwitchValue v = switch_value(kMallocNoFastbinsSwitch);
    const char* text = std::getenv(kMallocNoFastbinsSwitch.name);
    // an invalid value: the CPU's default until the Error is heard
    const bool off = v == SwitchValue::on || (v != SwitchValue::off && kMallocNoFastbinsSwitch.unset_means());
    return Tuning{v, v == SwitchValue::invalid && text ? std::string(text) : std::string(),
                  off && mallopt(M_MXFAST, 0) == 1};
}();

}  // namespace

void check_malloc_tuning() {
    if (tuning.value == SwitchValue::invalid) fail_invalid_switch(kMallocNoFastbinsSwitch, tuning.invalid);
}

bool malloc_fastbins_off() { return tuning.fastbins_off; }

}  // namespace xtgrad::detail
