// The library's on/off environment switches, read one way: unset or empty is the switch's
// default, 1 is on, 0 is off, and any other value is an Error naming the variable, the value and
// what 1 and 0 do. (XTGRAD_TRACE and XTGRAD_GEMM_PROFILE used to take anything but 0 as on, so
// XTGRAD_TRACE=false or =off switched the trace on.) Internal: only the library's sources include it.
#pragma once

#include <atomic>
#include <string>
#include <string_view>

namespace xtgrad::detail {

// Where a speed switch's mechanism acts, as flags (none: in every run). A measurement of the
// switch sets up a run where it acts, or refuses one where it cannot: on against off there
// would time noise (xtgrad_bench --alternate; bench/compare_builds.sh reads them from
// xtgrad_bench --list-switches, as the words in parentheses).
enum SwitchActs : unsigned {
    kActsAnywhere = 0,
    kActsOnWorkers = 1u << 0,       // the pool's workers: 2 threads or more ("workers")
    kActsUnderAutocast = 1u << 1,   // bf16 autocast ("autocast")
    kActsOnInference = 1u << 2,     // the forward under NoGradGuard ("inference")
    kActsWithBlockCache = 1u << 3,  // the block cache on ("block-cache")
    kActsOnOneThread = 1u << 4,     // a process on one thread ("one-thread")
    kActsOnOptimizer = 1u << 5,     // the optimizer's step ("optimizer"; seed-d takes one with --adam)
    kActsInBackward = 1u << 6,      // the optimizer stepping in backward ("in-backward": --optimizer-in-backward)
};

struct EnvSwitch {
    const char* name;       // "XTGRAD_TRACE"
    const char* on;         // what 1 does, for the message: "print every backward node as it runs"
    const char* off;        // what 0 does
    bool (*unset_means)();  // the default: always_off, always_on, or by CPU (speed_switches.hpp)
    unsigned acts = kActsAnywhere;  // SwitchActs: where a speed switch's mechanism acts
    // Why a speed switch is fixed for the process (not settable while it runs), or null where it is not
    const char* fixed_because = nullptr;
};

inline bool always_off() { return false; }
inline bool always_on() { return true; }

// The debugging switches (one definition each: the reader and check_environment use the same);
// the speed switches are in speed_switches.hpp.
inline constexpr EnvSwitch kTraceSwitch{"XTGRAD_TRACE", "print every backward node as it runs", "no trace, the default",
                                  always_off};
inline constexpr EnvSwitch kGemmProfileSwitch{"XTGRAD_GEMM_PROFILE", "time every matrix product, print the table at exit",
                                              "no profile, the default", always_off};
inline constexpr EnvSwitch kBreakTrapSwitch{"XTGRAD_BREAK_TRAP", "raise SIGTRAP at a match", "no signal, the default",
                                      always_off};
enum class SwitchValue { unset, off, on, invalid };

// The variable's value as a switch; never throws (a reader that runs before main, where an
// exception would end the program, keeps `invalid` and throws at first use).
SwitchValue switch_value(const EnvSwitch& s);

// The Error for an invalid value, e.g.
//   XTGRAD_TRACE: 'false' is neither 1 (print every backward node as it runs) nor 0 (no trace)
[[noreturn]] void fail_invalid_switch(const EnvSwitch& s);
// The same for a value read earlier (a switch read once, before main: the environment may have changed since).
[[noreturn]] void fail_invalid_switch(const EnvSwitch& s, std::string_view value);

// unset: s.unset_means(); 1: true; 0: false; anything else: fail_invalid_switch.
bool read_switch(const EnvSwitch& s);

// A switch that can be set in a running process (the speed switches' values,
// speed_switch_state.cpp): its environment value (read at the first use; an invalid one throws
// there, as read_switch does) unless set().
class SettableSwitch {
public:
    explicit constexpr SettableSwitch(const EnvSwitch& s) : switch_(s) {}
    bool get() const {
        int v = set_.load(std::memory_order_relaxed);
        if (v < 0) v = from_env_.load(std::memory_order_relaxed);
        if (v < 0) {
            v = read_switch(switch_) ? 1 : 0;
            from_env_.store(v, std::memory_order_relaxed);
        }
        return v == 1;
    }
    void set(bool on) { set_.store(on ? 1 : 0, std::memory_order_relaxed); }

private:
    const EnvSwitch& switch_;
    std::atomic<int> set_{-1};              // -1: not set
    mutable std::atomic<int> from_env_{-1};  // -1: not read yet
};

// An environment variable's value as an error message quotes it: its first 40 bytes, UTF-8 text
// kept, each control (a newline too), each byte that is not UTF-8 and the backslash as \xHH (the
// value is the user's, the message must stay one readable line of text); a longer value ends in
// "... (N bytes)", so the cut is not mistaken for the value.
std::string shown_env_value(std::string_view value);

}  // namespace xtgrad::detail
