// The speed switches' values in a running process (speed_switches.hpp): one SettableSwitch per
// entry of kSpeedSwitches, in its order. Not in speed_switches.cpp: that file's CPU defaults are
// linked by programs without the products (fuzz/build.sh's loaders), and this table names every
// switch, XTGRAD_SMALL_GEMM_BF16's default in gemm/blas_bf16.cpp and XTGRAD_SMALL_GEMM_AMX's in
// gemm/small_gemm.cpp too.
#include <xtgrad/autograd/speed_switches.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/malloc_tuning.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <iterator>
#include <string>
#include <utility>

namespace xtgrad::detail {

namespace {

constexpr std::size_t kCount = std::size(kSpeedSwitches);

template <std::size_t... I>
constexpr std::array<SettableSwitch, kCount> make_states(std::index_sequence<I...>) {
    return {SettableSwitch{*kSpeedSwitches[I]}...};
}

// Built at compile time: read on every product and every idle wait of the pool, without a guard
constinit std::array<SettableSwitch, kCount> states = make_states(std::make_index_sequence<kCount>{});

// s's entry in kSpeedSwitches (by address), or kCount
std::size_t position(const EnvSwitch& s) {
    return static_cast<std::size_t>(std::find(std::begin(kSpeedSwitches), std::end(kSpeedSwitches), &s) -
                                    std::begin(kSpeedSwitches));
}

std::size_t index_of(const EnvSwitch& s) {
    const std::size_t i = position(s);
    if (i == kCount) fail("{}: not a speed switch (autograd/speed_switches.hpp lists them)", s.name);
    return i;
}

}  // namespace

bool speed_switch_on(const EnvSwitch& s) {
    if (&s == &kMallocNoFastbinsSwitch) return malloc_fastbins_off();  // set at load, whatever the environment says now
    return states[index_of(s)].get();
}

bool speed_switch_settable(const EnvSwitch& s) {
    return position(s) != kCount && s.fixed_because == nullptr;
}

void set_speed_switch(const EnvSwitch& s, bool on) {
    const std::size_t i = index_of(s);  // not a speed switch: that Error first
    if (!speed_switch_settable(s))
        fail("{}: fixed when the process starts ({}); compare it on against off across processes "
             "(bench/compare_builds.sh --switches)",
             s.name, s.fixed_because);
    states[i].set(on);
}

const EnvSwitch* speed_switch_named(std::string_view name) {
    for (const EnvSwitch* s : kSpeedSwitches)
        if (name == s->name) return s;
    return nullptr;
}

std::string speed_switch_tags(const EnvSwitch& s) {
    std::string tags = speed_switch_settable(s) ? "" : "fixed";
    for (const auto& [flag, word] : {std::pair{kActsOnWorkers, "workers"}, std::pair{kActsUnderAutocast, "autocast"},
                                     std::pair{kActsOnInference, "inference"}, std::pair{kActsWithBlockCache, "block-cache"},
                                     std::pair{kActsOnOneThread, "one-thread"}, std::pair{kActsOnOptimizer, "optimizer"},
                                     std::pair{kActsInBackward, "in-backward"}})
        if (s.acts & flag) {
            if (!tags.empty()) tags += ',';
            tags += word;
        }
    return tags;
}

}  // namespace xtgrad::detail
