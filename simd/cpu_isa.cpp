#include <xtgrad/simd/cpu_isa.hpp>

#include <xtgrad/autograd/env_switch.hpp>
#include <xtgrad/autograd/error.hpp>
#include "xtgrad_simd_config.hpp"

#include <atomic>
#include <cstdlib>
#include <string_view>

namespace xtgrad {

namespace detail {

Isa isa_from_env(const char* env) {
    if (!env || !*env) return avx512_available() ? Isa::avx512 : Isa::baseline;
    const std::string_view v(env);
    if (v == "baseline") return Isa::baseline;
    if (v == "avx512") {
        if (!avx512_available())
            fail("XTGRAD_ISA=avx512: this {} (use XTGRAD_ISA=baseline or unset it)",
                 XTGRAD_HAVE_AVX512_KERNELS ? "CPU has no AVX-512 F/BW/DQ/VL" : "build has no AVX-512 kernels");
        return Isa::avx512;
    }
    fail("XTGRAD_ISA={}: expected baseline or avx512", shown_env_value(v));
}

}  // namespace detail

namespace {

Isa initial_isa() { return detail::isa_from_env(std::getenv("XTGRAD_ISA")); }

std::atomic<Isa>& current() {
    static std::atomic<Isa> isa{initial_isa()};
    return isa;
}

}  // namespace

const char* isa_name(Isa isa) { return isa == Isa::avx512 ? "avx512" : "baseline"; }

bool avx512_available() {
#if XTGRAD_HAVE_AVX512_KERNELS
    // __builtin_cpu_supports also requires the OS to save the ZMM registers (XGETBV).
    static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                            __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    return yes;
#else
    return false;
#endif
}

Isa active_isa() { return current().load(std::memory_order_relaxed); }

void set_isa(Isa isa) {
    if (isa == Isa::avx512 && !avx512_available())
        fail("set_isa(avx512): this {}", XTGRAD_HAVE_AVX512_KERNELS ? "CPU has no AVX-512 F/BW/DQ/VL"
                                                                     : "build has no AVX-512 kernels");
    current().store(isa, std::memory_order_relaxed);
}

IsaScope::IsaScope(Isa isa) : previous_(active_isa()) { set_isa(isa); }
IsaScope::~IsaScope() { current().store(previous_, std::memory_order_relaxed); }

}  // namespace xtgrad
