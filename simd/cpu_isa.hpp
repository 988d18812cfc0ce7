// Which SIMD instruction set xtgrad's own vector kernels (simd/vector_kernels.hpp) run.
//
// The library is built for one baseline (-march, x86-64-v3 = AVX2 + FMA by default) so that one
// build runs on every machine of the project. The vector kernels are compiled a second time for
// AVX-512 (simd/vector_kernels_avx512.cpp) and chosen at run time when the CPU has it:
// 16 floats per instruction instead of 8.
//
//   XTGRAD_ISA=baseline ./program     # force the baseline kernels (compare, or rule them out)
//   IsaScope scope(Isa::baseline);    // the same from C++ (tests run both paths)
#pragma once

namespace xtgrad {

enum class Isa {
    baseline,  // what the build's -march allows (AVX2 + FMA for the default x86-64-v3)
    avx512,    // AVX-512 F, BW, DQ, VL (x86-64-v4)
};

const char* isa_name(Isa isa);

// True when this build has the AVX-512 kernels and the CPU (and OS) runs them.
bool avx512_available();

// The set the kernels use now: avx512 when available, unless XTGRAD_ISA=baseline (read once,
// at the first call; any other value than baseline/avx512 is an Error) or set_isa said otherwise.
Isa active_isa();

namespace detail {
// XTGRAD_ISA's value (nullptr: unset) as active_isa() reads it at its first call; a bad value is
// an Error quoting at most 40 characters of it.
Isa isa_from_env(const char* value);
}  // namespace detail

// Throws Error when asked for avx512 where it is not available.
void set_isa(Isa isa);

// RAII: the kernels use `isa` until the scope ends (then the previous set again).
class IsaScope {
public:
    explicit IsaScope(Isa isa);
    ~IsaScope();
    IsaScope(const IsaScope&) = delete;
    IsaScope& operator=(const IsaScope&) = delete;

private:
    Isa previous_;
};

}  // namespace xtgrad
