#include <xtgrad/simd/cpu_peak.hpp>

#include <chrono>

namespace xtgrad {

#if defined(__x86_64__)
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// `iterations` steps of 12 independent chains of one instruction (registers 0-11 accumulate,
// 12 and 13 are the operands, all zeroed first: no denormal assists), the loop counted in the
// asm itself. Written in asm so that what is timed does not depend on the build: compiled at -O0
// or with the sanitizers, the same loop in intrinsics keeps its chains in memory and measures the
// loads and stores (11 against 21 GFLOP/s for FMA and bf16 here, the ratio reversed).
#define XTGRAD_TWELVE_CHAINS(insn, reg)                                                              \
    insn " %%" reg "12, %%" reg "13, %%" reg "0\n\t" insn " %%" reg "12, %%" reg "13, %%" reg "1\n\t"   \
    insn " %%" reg "12, %%" reg "13, %%" reg "2\n\t" insn " %%" reg "12, %%" reg "13, %%" reg "3\n\t"   \
    insn " %%" reg "12, %%" reg "13, %%" reg "4\n\t" insn " %%" reg "12, %%" reg "13, %%" reg "5\n\t"   \
    insn " %%" reg "12, %%" reg "13, %%" reg "6\n\t" insn " %%" reg "12, %%" reg "13, %%" reg "7\n\t"   \
    insn " %%" reg "12, %%" reg "13, %%" reg "8\n\t" insn " %%" reg "12, %%" reg "13, %%" reg "9\n\t"   \
    insn " %%" reg "12, %%" reg "13, %%" reg "10\n\t" insn " %%" reg "12, %%" reg "13, %%" reg "11\n\t"
#define XTGRAD_ZERO_FOURTEEN(zero, reg)                                                                   \
    zero " %%" reg "0, %%" reg "0, %%" reg "0\n\t" zero " %%" reg "1, %%" reg "1, %%" reg "1\n\t"       \
    zero " %%" reg "2, %%" reg "2, %%" reg "2\n\t" zero " %%" reg "3, %%" reg "3, %%" reg "3\n\t"       \
    zero " %%" reg "4, %%" reg "4, %%" reg "4\n\t" zero " %%" reg "5, %%" reg "5, %%" reg "5\n\t"       \
    zero " %%" reg "6, %%" reg "6, %%" reg "6\n\t" zero " %%" reg "7, %%" reg "7, %%" reg "7\n\t"       \
    zero " %%" reg "8, %%" reg "8, %%" reg "8\n\t" zero " %%" reg "9, %%" reg "9, %%" reg "9\n\t"       \
    zero " %%" reg "10, %%" reg "10, %%" reg "10\n\t" zero " %%" reg "11, %%" reg "11, %%" reg "11\n\t" \
    zero " %%" reg "12, %%" reg "12, %%" reg "12\n\t" zero " %%" reg "13, %%" reg "13, %%" reg "13\n\t"

// `n` (> 0) steps of `insn` on `reg` registers, zeroed first with `zero`.
#define XTGRAD_CHAINS(zero, insn, reg, n)                                                               \
    asm volatile(XTGRAD_ZERO_FOURTEEN(zero, reg) "1:\n\t" XTGRAD_TWELVE_CHAINS(insn, reg)                \
                 "dec %[steps]\n\t"                                                                    \
                 "jnz 1b\n\t"                                                                          \
                 : [steps] "+r"(n)                                                                     \
                 :                                                                                     \
                 : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", \
                   "xmm11", "xmm12", "xmm13", "cc")

void fma_avx512_steps(long n) { XTGRAD_CHAINS("vpxord", "vfmadd231ps", "zmm", n); }  // 16 fp32 lanes
void fma_avx2_steps(long n) { XTGRAD_CHAINS("vpxor", "vfmadd231ps", "ymm", n); }     // 8 fp32 lanes
// vdpbf16ps: per fp32 lane, two bf16 products added to the sum
void bf16_dot_steps(long n) { XTGRAD_CHAINS("vpxord", "vdpbf16ps", "zmm", n); }

// Instructions per second of one of the loops above.
double instructions_per_second(void (*steps)(long), long iterations) {
    const auto t0 = std::chrono::steady_clock::now();
    steps(iterations);
    return 12.0 * static_cast<double>(iterations) / seconds_since(t0);
}

}  // namespace
#endif

double fma_peak_avx512_gflops(long iterations) {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (iterations > 0 && __builtin_cpu_supports("avx512f")) return instructions_per_second(fma_avx512_steps, iterations) * 16 * 2 / 1e9;
#endif
    (void)iterations;
    return 0;
}

double fma_peak_avx2_gflops(long iterations) {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (iterations > 0 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return instructions_per_second(fma_avx2_steps, iterations) * 8 * 2 / 1e9;
#endif
    (void)iterations;
    return 0;
}

double bf16_dot_peak_gflops(long iterations) {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (iterations > 0 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16"))
        return instructions_per_second(bf16_dot_steps, iterations) * 16 * 4 / 1e9;
#endif
    (void)iterations;
    return 0;
}

}  // namespace xtgrad
