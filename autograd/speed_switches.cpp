#include <xtgrad/autograd/speed_switches.hpp>

#include <xtgrad/autograd/page_moves.hpp>
#include <xtgrad/simd/cpu_model.hpp>

namespace xtgrad::detail {

// The defaults that differ by CPU (or, for the block cache, by how the machine maps memory),
// each from on/off runs on every CPU the project has met (docs/performance.md, "Switches"); a CPU
// nobody has measured gets what is safe there.

// The block cache (array_allocator.cpp): by what a page move costs on this machine
// (page_moves.hpp), not by CPU. Where a moved page is as cheap to touch as any other
// (the Intel Xeon and the Zen 4, KVM guests) the cache's step time was within the noise and it
// saves resident memory (seed-b 0.78 -> 0.58x torch's peak RSS). Under the PVM guests' shadowed
// page tables (the Zen 5s of 2026-11-28/29) each moved page pays a hidden fault
// at its first touch, 3.4-4.5 us, and each new page 10-18 us: seed-d's one-thread fwd + bwd took 1654 ms
// with the cache and its cut, 870 with the cache alone, 794 from the heap; seed-b (batch 16, 2
// threads) 0.90x from the heap with the cache. So on where moves are cheap, off where they are
// dear. Its cut stays on (XTGRAD_BLOCK_CACHE_CUT): with the cache asked for there, the cut cost
// seed-d 1.41x at 1 thread but saved 1.14x at 2 and 1.26x on seed-b (new pages cost more).
bool block_cache_by_machine() { return memory::page_moves_cheap(); }

// The AVX-512 skinny kernels' prefetch (skinny_avx512.cpp): into L1, a product on the Zen 4
// took about its memory time plus its arithmetic; into L2 the Winter Games step went 100-110 ->
// 87-92 ms at 1 thread, 65-70 -> 58-63 at 2 (alternating runs; 2026-12-07, alternating steps: 1.17x
// and 1.11x, on faster in 60 of 60 and 59 of 60 pairs). On the Zen 5, L1 streams at the
// read floor; the Intel Xeon was measured with L1 only. So L2 on the Zen 4 alone (the Zen 3,
// family 25 too, has no AVX-512 kernels to prefetch in).
bool skinny_prefetch_l2_by_cpu() { return cpu_model().is_amd_zen4(); }

// One-thread Adam's prefetch 2 KiB ahead (optimizer.cpp): the Intel Xeon's step in backward
// 95.4 -> 88.4 ms with it (5 alternating rounds), the Zen 5's steps 1.00-1.05x (winter, seed-d
// with Adam, seed-b; 3 rounds, compare_builds.sh, where it acts: one thread); on the Zen 4 it
// costs (bench/bandwidth_bench's Adam 30.5 -> 33.6-35.4 ms; 2026-12-07, alternating steps: winter's
// step 0.92x with it, off faster in 89 of 90 pairs over 6 rounds; in backward 0.96x, 51 of 60 over
// 4). So on everywhere but AMD family 25.
// The Zen 3 (family 25 too) read 1.03-1.05x faster with it (winter over 4 rounds of alternating
// steps, seed-d with Adam over one; not in every pair): not enough to move its default.
bool adam_prefetch_by_cpu() { return !cpu_model().is_amd(25); }

// A weight gradient over 7 rows made inside Adam's update from its factors, never stored
// (autograd/gradient_consumer.hpp; the Winter Games step in backward): the Zen 5's step 1.02-1.07x
// faster with it (docs/performance.md, "The Winter Games step"): on there. The Zen 3 (AVX2 kernel)
// read 0.97-1.04x, the Zen 4 1.01-1.02x (10 rounds of alternating steps on 1 and on 2 threads, on
// faster in 7 and 6 of 10 rounds, 2026-12-07): neither moves in every round, so off elsewhere.
bool gradient_as_factors_by_cpu() { return cpu_model().is_amd(26); }

// A backward's products on OpenBLAS (gemm/blas.cpp): on the Zen 3 every product on OpenBLAS
// (XTGRAD_GEMM_BACKEND=openblas against oneDNN, 3 rounds, bench/results/2026-12-07-amd-f25-m1-
// backends.jsonl) ran seed-d's backward 0.84x the time on 1 thread and 0.82x on 2, seed-b:16's
// 0.93x, but its forward 1.00-1.10x and inference 0.98-1.16x: oneDNN's avx2 kernels lose on A·B
// and Aᵀ·B, not on the forward's A·Bᵀ. Elsewhere oneDNN ran the products ahead of OpenBLAS: on
// the Zen 5 the switch on took seed-d and seed-b:16 1.5-1.6x the time (off won every pair over 4
// rounds, bench/results/2026-12-07-amd-f26-m2-switches-backward-openblas.jsonl), on the Zen 4
// seed-d 1.05-1.08x and seed-b:16 1.06x (off faster in 20 of 20 and 11 of 12 pairs, 4 rounds,
// bench/results/2026-12-07-amd-f25-m17-switches-new.jsonl), and the Intel Xeon ran oneDNN's
// products faster too. So on the Zen 3 alone.
bool backward_products_on_openblas_by_cpu() { return cpu_model().is_amd_zen3(); }

// oneDNN's A·B with a narrow B, B transposed first (gemm/blas.cpp, "reoriented";
// bench/narrow_product_probe, one thread, GFLOP/s as stored -> transposed first): the Zen 5
// 203-221 -> 206-236; the Intel Xeon 159-167 -> 148-157; the Zen 4 slower too, (3168, 512, 512)
// 109 -> 106, (3200, 256, 1024) 104 -> 100, (3168, 512, 5000) 105 -> 95. So on the Zen 5 alone.
bool narrow_nn_transposed_by_cpu() { return cpu_model().is_amd(26); }

// Inference's x·Wᵀ on a transposed copy of W (autograd/transposed_weights.hpp). On the Zen 4,
// oneDNN's A·B beats its A·Bᵀ on tutorial D's forward shapes (bench/narrow_product_probe, one
// thread, GFLOP/s, NT -> NN on Wᵀ kept): (320, 512, 2048) 100 -> 111, (640, 512, 512) 105 -> 111,
// a 2-thread half (320, 256, 512) 105 -> 113; seed-d's inference, 3 alternating rounds, 471 -> 420
// ms on one thread, 234 -> 220 on two; seed-b's within the drift. On the Zen 5 (AMD family 26)
// seed-d's inference 1.04x and 1.06x faster with it (1 and 2 threads, 3 alternating rounds, every
// round; in the 12-switch run 1.05x, 1.11x, and seed-b 1.05x). On the Intel Xeon (family 6, model
// 207) separate processes read 0.90-1.07x on one thread and 0.92-1.29x on two (noise); in one
// process (xtgrad_bench --alternate, inferences alternating) seed-d's inference read 1.055x on one
// thread in 15 of 16 pairs, 1.02-1.05x on two in 29 of 42, seed-b's (batch 16, 2 threads) 1.07x in
// 8 of 8: on. By CPU, not by a start-up timing: the two orientations sum K in other orders where
// K = 2048 (most outputs differ in their last bits), and two runs on one machine should agree.
// On the Zen 3 (family 25 model 1, AVX2: oneDNN's avx2 kernels) it costs: seed-d's inference on
// two threads 1.30x slower with it (0.77 off over on, off faster in every alternating pair), on one
// 1.00x, winter's 0.95-0.97x: off there, so on for the Zen 4 of family 25 only.
bool inference_weights_transposed_by_cpu() {
    return cpu_model().is_amd_zen4() || cpu_model().is_amd(26) || cpu_model().is_intel(6);
}

// The AVX-512 skinny_tn's streamed stores for a weight gradient read only after backward
// (gemm/skinny_avx512.cpp): a plain store reads each line before it writes it. On the Zen 4 the
// Winter Games step's backward took 27.5 -> 18.9 ms at 1 thread, the step 70.8 -> 62.4 ms (3
// alternating rounds; 2026-12-07, alternating steps: 1.13x and 1.05x on 1 and 2 threads, on faster
// in 58 and 48 of 60 pairs); the step in backward, which reads the gradient at once, keeps plain
// stores (gemm/blas.hpp, ResultReadAtOnce). The Zen 5's step read 0.88x with it (off). The Intel
// Xeon's (family 6, model 207), in separate processes 1.24x over 2 rounds, then 1.07x over 5, was
// settled in one process (xtgrad_bench --alternate, steps alternating): backward 1.17-1.24x
// faster with it, the step 1.04-1.07x, on 1 and 2 threads, in 27-30 of 30 pairs each: on.
// (The AVX2 kernel streams everywhere, measured when it was written.)
bool skinny_streamed_gradient_by_cpu() { return cpu_model().is_amd_zen4() || cpu_model().is_intel(6); }

// small_gemm_bf16_by_cpu, decided by a measured rate rather than the family, is in gemm/blas_bf16.cpp
// beside its switch: it asks the kernel and autocast's rates, which the programs linking this
// file without the products (fuzz/build.sh's loaders) do not have.

}  // namespace xtgrad::detail
