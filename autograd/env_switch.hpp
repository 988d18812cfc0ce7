// The library's on/off environment switches, read one way: unset or empty is the switch's
// default, 1 is on, 0 is off, and any other value is an Error naming the variable, the value and
// what 1 and 0 do. (XTGRAD_TRACE and XTGRAD_GEMM_PROFILE used to take anything but 0 as on, so
// XTGRAD_TRACE=false or =off switched the trace on.) Internal: only the library's sources include it.
#pragma once

#include <string>
#include <string_view>

namespace xtgrad::detail {

struct EnvSwitch {
    const char* name;  // "XTGRAD_TRACE"
    const char* on;    // what 1 does, for the message: "print every backward node as it runs"
    const char* off;   // what 0 does
};

// The switches (one definition each: the reader and check_environment use the same)
inline constexpr EnvSwitch kTraceSwitch{"XTGRAD_TRACE", "print every backward node as it runs", "no trace, the default"};
inline constexpr EnvSwitch kGemmProfileSwitch{"XTGRAD_GEMM_PROFILE", "time every matrix product, print the table at exit",
                                              "no profile, the default"};
inline constexpr EnvSwitch kBreakTrapSwitch{"XTGRAD_BREAK_TRAP", "raise SIGTRAP at a match", "no signal, the default"};
inline constexpr EnvSwitch kBlockCacheSwitch{"XTGRAD_BLOCK_CACHE", "keep large blocks for reuse; unset: the CPU's default",
                                             "take them from the C heap"};
inline constexpr EnvSwitch kBlockCacheCutSwitch{"XTGRAD_BLOCK_CACHE_CUT",
                                                "past its budget the block cache cuts and joins cached pages, the default",
                                                "past its budget it unmaps cached blocks and maps new pages"};
// The speed mechanisms bench/run.sh --compare-switches measures on against off (docs/performance.md,
// "Switches"); unset is the default: on, or the CPU's where the CPUs measured disagree.
inline constexpr EnvSwitch kSmallGemmSwitch{"XTGRAD_SMALL_GEMM", "small products to xtgrad's own kernels, the default",
                                            "every product to the GEMM backend"};
inline constexpr EnvSwitch kSkinnyGemmSwitch{"XTGRAD_SKINNY_GEMM",
                                             "skinny products to xtgrad's skinny kernels where they win, the default",
                                             "skinny products to the GEMM backend"};
inline constexpr EnvSwitch kSkinnyPrefetchL2Switch{
    "XTGRAD_SKINNY_PREFETCH_L2", "the skinny kernels prefetch the weight into L2; unset: the CPU's default",
    "they prefetch it into L1"};
inline constexpr EnvSwitch kPoolSpinSwitch{"XTGRAD_POOL_SPIN",
                                           "idle pool workers spin, then yield, before sleeping, the default",
                                           "idle pool workers sleep at once"};
inline constexpr EnvSwitch kBf16SmallInFp32Switch{"XTGRAD_BF16_SMALL_IN_FP32",
                                                  "autocast runs products with a side under 8 in fp32, the default",
                                                  "autocast runs every product but the smallest in bf16"};
inline constexpr EnvSwitch kAdamPrefetchSwitch{
    "XTGRAD_ADAM_PREFETCH", "Adam on one thread prefetches its four streams 2 KiB ahead; unset: the CPU's default",
    "no software prefetch"};

// Every speed switch, for check_environment and the tests.
inline constexpr const EnvSwitch* kSpeedSwitches[] = {
    &kBlockCacheSwitch, &kBlockCacheCutSwitch, &kSmallGemmSwitch,       &kSkinnyGemmSwitch,
    &kSkinnyPrefetchL2Switch, &kPoolSpinSwitch, &kBf16SmallInFp32Switch, &kAdamPrefetchSwitch};

enum class SwitchValue { unset, off, on, invalid };

// The variable's value as a switch; never throws (a reader that runs before main, where an
// exception would end the program, keeps `invalid` and throws at first use).
SwitchValue switch_value(const EnvSwitch& s);

// The Error for an invalid value, e.g.
//   XTGRAD_TRACE: 'false' is neither 1 (print every backward node as it runs) nor 0 (no trace)
[[noreturn]] void fail_invalid_switch(const EnvSwitch& s);

// unset: `unset_means`; 1: true; 0: false; anything else: fail_invalid_switch.
bool read_switch(const EnvSwitch& s, bool unset_means);

// An environment variable's value as an error message quotes it: its first 40 bytes, each byte
// outside printable ASCII as \xHH (the value is the user's, the message must stay one readable
// line of text: a newline or a non-UTF-8 byte would break it).
std::string shown_env_value(std::string_view value);

}  // namespace xtgrad::detail
