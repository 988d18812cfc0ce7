#include <xtgrad/autograd/speed_switches.hpp>

#include <xtgrad/simd/cpu_model.hpp>

namespace xtgrad::detail {

// The defaults that differ by CPU, each from on/off runs on every CPU the project has met
// (docs/performance.md, "Switches"); a CPU nobody has measured gets what is safe there.

// The block cache (array_allocator.cpp): its gain is resident memory; its step time was within
// the noise on the Intel Xeon (family 6) and the Zen 4 (AMD family 25), but on the Zen 5 (AMD
// family 26) the same runs took up to 1.74x the user time. On where measured neutral, else off.
bool block_cache_by_cpu() {
    const CpuModel& cpu = cpu_model();
    return cpu.is_intel(6) || cpu.is_amd(25);
}

// The AVX-512 skinny kernels' prefetch (skinny_avx512.cpp): into L1, a product on the Zen 4
// took about its memory time plus its arithmetic; into L2 the Winter Games step went 100-110 ->
// 87-92 ms at 1 thread, 65-70 -> 58-63 at 2 (alternating runs). On the Zen 5, L1 streams at the
// read floor; the Intel Xeon was measured with L1 only. So L2 on AMD family 25 alone.
bool skinny_prefetch_l2_by_cpu() { return cpu_model().is_amd(25); }

// One-thread Adam's prefetch 2 KiB ahead (optimizer.cpp): the Intel Xeon's step in backward
// 95.4 -> 88.4 ms with it (5 alternating rounds), the Zen 5 within the drift; on the Zen 4 it
// costs (bench/bandwidth_bench's Adam 30.5 -> 33.6-35.4 ms). So on everywhere but AMD family 25.
bool adam_prefetch_by_cpu() { return !cpu_model().is_amd(25); }

// oneDNN's A·B with a narrow B, B transposed first (gemm/blas.cpp, "reoriented";
// bench/narrow_product_probe, one thread, GFLOP/s as stored -> transposed first): the Zen 5
// 203-221 -> 206-236; the Intel Xeon 159-167 -> 148-157; the Zen 4 slower too, (3168, 512, 512)
// 109 -> 106, (3200, 256, 1024) 104 -> 100, (3168, 512, 5000) 105 -> 95. So on the Zen 5 alone.
bool narrow_nn_transposed_by_cpu() { return cpu_model().is_amd(26); }

// Inference's x·Wᵀ on a transposed copy of W (autograd/transposed_weights.hpp). On the Zen 4,
// oneDNN's A·B beats its A·Bᵀ on tutorial D's forward shapes (bench/narrow_product_probe, one
// thread, GFLOP/s, NT -> NN on Wᵀ kept): (320, 512, 2048) 100 -> 111, (640, 512, 512) 105 -> 111,
// a 2-thread half (320, 256, 512) 105 -> 113; seed-d's inference, 3 alternating rounds, 471 -> 420
// ms on one thread, 234 -> 220 on two; seed-b's within the drift. Not measured on the Zen 5 or
// the Intel Xeon: off there. By CPU, not by a start-up timing: the two orientations sum K in
// other orders where K = 2048 (most outputs differ in their last bits), and two runs on one
// machine should agree.
bool inference_weights_transposed_by_cpu() { return cpu_model().is_amd(25); }

// The AVX-512 skinny_tn's streamed stores for a weight gradient read only after backward
// (gemm/skinny_avx512.cpp): a plain store reads each line before it writes it. On the Zen 4 the
// Winter Games step's backward took 27.5 -> 18.9 ms at 1 thread, the step 70.8 -> 62.4 ms (3
// alternating rounds); the step in backward, which reads the gradient at once, keeps plain
// stores (gemm/blas.hpp, ResultReadAtOnce). Not measured on the Zen 5 or the Intel Xeon: off
// there, as it was. (The AVX2 kernel streams everywhere, measured when it was written.)
bool skinny_streamed_gradient_by_cpu() { return cpu_model().is_amd(25); }

// small_gemm_bf16_by_cpu, decided by a measured rate rather than the family, is in gemm/blas_bf16.cpp
// beside its switch: it asks the kernel and autocast's rates, which the programs linking this
// file without the products (fuzz/build.sh's loaders) do not have.

}  // namespace xtgrad::detail
