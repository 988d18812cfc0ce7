// The arithmetic ceilings of one core, measured: how many fp32 FMAs (AVX-512, AVX2) and bf16
// dot products (AVX512-BF16's vdpbf16ps) the calling thread's core retires per second.
// bench/ceiling_bench prints them at length (the scale of every GFLOP/s figure in
// docs/performance.md); autocast runs the last two briefly to learn whether bf16 products pay on
// this CPU (autograd/autocast.hpp): some have AVX512-BF16 at half the fp32 rate.
//
// Each probe times `iterations` steps of 12 independent accumulator chains (more than an FMA's
// latency times its ports on current cores), so the loop is bound by issue alone. Each ISA's
// loop is compiled for it and chosen at run time; a CPU without the instructions gives 0.
#pragma once

namespace xtgrad {

// GFLOP/s of one core: an FMA counts 2 FLOPs per fp32 lane, a bf16 dot product 4 (two
// multiply-adds per lane, into one fp32 sum).
double fma_peak_avx512_gflops(long iterations);
double fma_peak_avx2_gflops(long iterations);
double bf16_dot_peak_gflops(long iterations);

}  // namespace xtgrad
