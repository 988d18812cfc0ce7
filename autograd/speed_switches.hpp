// The speed switches: each turns one speed mechanism on (1) or off (0); unset is its default,
// which is on, or, where the CPUs measured disagree, this CPU's (cpu_model, read at run time), or
// for the block cache this machine's (page_moves.hpp, measured at run time).
// bench/run.sh --compare-switches measures each on against off (docs/performance.md, "Switches");
// `xtgrad_bench --list-switches` prints this list with this CPU's defaults, and the scripts
// (bench/compare_builds.sh, tests/bench/switch_cli_tests.sh) read it there. The library reads
// each switch through speed_switch_on (below), so all but the block cache's two and malloc's can be
// flipped in a running process. Internal.
#pragma once

#include <xtgrad/autograd/env_switch.hpp>

#include <string>
#include <string_view>

namespace xtgrad::detail {

// The defaults by CPU or machine (speed_switches.cpp says what was measured where)
bool block_cache_by_machine();
bool skinny_prefetch_l2_by_cpu();
bool adam_prefetch_by_cpu();
bool narrow_nn_transposed_by_cpu();
bool inference_weights_transposed_by_cpu();
bool skinny_streamed_gradient_by_cpu();
bool small_gemm_bf16_by_cpu();  // in gemm/blas_bf16.cpp (speed_switches.cpp says why)
bool inference_weights_packed_by_cpu();  // in gemm/blas_bf16.cpp, the same way
bool small_gemm_amx_by_cpu();            // in gemm/small_gemm.cpp
bool gradient_as_factors_by_cpu();
bool backward_products_on_openblas_by_cpu();

inline constexpr const char* kBlockCachePages = "the block cache's pages are the process's from its first large block";
inline constexpr EnvSwitch kBlockCacheSwitch{"XTGRAD_BLOCK_CACHE", "keep large blocks for reuse; unset: on where a moved page is cheap to touch",
                                             "take them from the C heap", block_cache_by_machine, kActsAnywhere,
                                             kBlockCachePages};
inline constexpr EnvSwitch kBlockCacheCutSwitch{"XTGRAD_BLOCK_CACHE_CUT",
                                                "past its budget the block cache cuts and joins cached pages, the default",
                                                "past its budget it unmaps cached blocks and maps new pages", always_on,
                                                kActsWithBlockCache, kBlockCachePages};
inline constexpr EnvSwitch kSmallGemmSwitch{"XTGRAD_SMALL_GEMM", "small products to xtgrad's own kernels, the default",
                                            "every product to the GEMM backend", always_on};
inline constexpr EnvSwitch kSkinnyGemmSwitch{"XTGRAD_SKINNY_GEMM",
                                             "skinny products to xtgrad's skinny kernels where they win, the default",
                                             "skinny products to the GEMM backend", always_on};
inline constexpr EnvSwitch kSkinnyPrefetchL2Switch{
    "XTGRAD_SKINNY_PREFETCH_L2", "the skinny kernels prefetch the weight into L2; unset: the CPU's default",
    "they prefetch it into L1", skinny_prefetch_l2_by_cpu};
inline constexpr EnvSwitch kPoolSpinSwitch{"XTGRAD_POOL_SPIN",
                                           "idle pool workers spin, then yield, before sleeping, the default",
                                           "idle pool workers sleep at once", always_on, kActsOnWorkers};
inline constexpr EnvSwitch kBf16SmallInFp32Switch{"XTGRAD_BF16_SMALL_IN_FP32",
                                                  "autocast runs products with a side under 8 in fp32, the default",
                                                  "autocast runs every product but the smallest in bf16", always_on,
                                                  kActsUnderAutocast};
inline constexpr EnvSwitch kAdamPrefetchSwitch{
    "XTGRAD_ADAM_PREFETCH", "Adam on one thread prefetches its four streams 2 KiB ahead; unset: the CPU's default",
    "no software prefetch", adam_prefetch_by_cpu, kActsOnOneThread | kActsOnOptimizer};
inline constexpr EnvSwitch kNarrowNnTransposedSwitch{
    "XTGRAD_NARROW_NN_TRANSPOSED",
    "oneDNN's A·B with a narrow B (at most 512 columns) runs as A·(Bᵀ)ᵀ, B transposed first; unset: the CPU's default",
    "it runs as stored", narrow_nn_transposed_by_cpu};
inline constexpr EnvSwitch kInferenceWeightsTransposedSwitch{
    "XTGRAD_INFERENCE_WEIGHTS_TRANSPOSED",
    "under NoGradGuard oneDNN's x·Wᵀ runs as x·(Wᵀ) on a transposed copy of W kept per version; unset: the CPU's default",
    "it runs on W as stored", inference_weights_transposed_by_cpu, kActsOnInference};

inline constexpr EnvSwitch kSkinnyStreamedGradientSwitch{
    "XTGRAD_SKINNY_STREAMED_GRADIENT",
    "the AVX-512 kernel writes a fresh weight gradient of 1 MiB or more over at most 7 rows with streamed stores, "
    "unless the step in backward reads it at once; unset: the CPU's default",
    "with plain stores", skinny_streamed_gradient_by_cpu};
inline constexpr EnvSwitch kSmallGemmBf16Switch{
    "XTGRAD_SMALL_GEMM_BF16",
    "under bf16 autocast, the medium blocks small_gemm takes (attention's, up to ~128 tokens) run in its bf16 kernel "
    "where AVX512-BF16's dot products measure at 1.25x the fp32 FMAs; unset: the CPU's default",
    "they run in its fp32 kernels", small_gemm_bf16_by_cpu, kActsUnderAutocast};
inline constexpr EnvSwitch kInferenceWeightsPackedSwitch{
    "XTGRAD_INFERENCE_WEIGHTS_PACKED",
    "under NoGradGuard and bf16 autocast, x·Wᵀ reads W from a copy in oneDNN's packed layout kept per version; "
    "unset: where oneDNN runs AMX, and on AMD family 26 (Zen 5)",
    "it reads W's bf16 copy as stored", inference_weights_packed_by_cpu, kActsUnderAutocast | kActsOnInference};
inline constexpr EnvSwitch kSmallGemmAmxSwitch{
    "XTGRAD_SMALL_GEMM_AMX",
    "small_gemm's bf16 kernel (attention's medium blocks under bf16 autocast) runs on AMX tiles; unset: where the "
    "CPU has them and Linux grants them",
    "it runs on AVX512-BF16's vdpbf16ps (slower than fp32 on the Intel Xeon: XTGRAD_SMALL_GEMM_BF16=0 keeps the blocks in fp32)", small_gemm_amx_by_cpu,
    kActsUnderAutocast};
inline constexpr EnvSwitch kLayerNormRecomputeSwitch{
    "XTGRAD_LAYER_NORM_RECOMPUTE",
    "the nodes that save layer norm's output keep how to make it again (its own input, mean and rstd) and backward "
    "makes it, the default: less memory",
    "they keep its values", always_on};
inline constexpr EnvSwitch kGradientAsFactorsSwitch{
    "XTGRAD_GRADIENT_AS_FACTORS",
    "with the step in backward, Adam takes a weight gradient over at most 7 rows as its two factors and makes it in "
    "its update, never stored; unset: the CPU's default",
    "the gradient is stored, then read by the update", gradient_as_factors_by_cpu, kActsOnOptimizer | kActsInBackward};
inline constexpr EnvSwitch kBackwardProductsOnOpenblasSwitch{
    "XTGRAD_BACKWARD_PRODUCTS_ON_OPENBLAS",
    "with oneDNN the backend, the A·B and Aᵀ·B products (a backward's dx = dy·W and dW = dyᵀ·x) run on OpenBLAS "
    "where it loads, split over the pool as oneDNN's are; unset: the CPU's default",
    "they run on oneDNN", backward_products_on_openblas_by_cpu};
// Off everywhere (autograd/malloc_tuning.cpp says what it does). On the Zen 5, off over on with
// one-thread runs pinned (bench/compare_builds.sh, 12-04): Winter's step on 1 thread 0.92-0.96
// (off faster in every one of 6 rounds), in backward 0.97 (7 of 8); on 2 threads 1.00, in backward
// 1.02; seed-d on 1 thread 1.03 (on faster in 6 of 6). It slows the Winter target more than it
// speeds seed-d, and one process serves every model. The unpinned rounds that had turned it on
// there ran each process on either vCPU, one 25 % slower (bench/pin_cpu.sh). Not measured elsewhere.
inline constexpr EnvSwitch kMallocNoFastbinsSwitch{
    "XTGRAD_MALLOC_NO_FASTBINS",
    "glibc's malloc keeps no fastbins (M_MXFAST 0): a small block freed is merged at once, not at the next large "
    "request; set when the library loads",
    "glibc's fastbins, the default", always_off, kActsAnywhere, "malloc is set up when the library loads"};
// Every speed switch, for check_environment, xtgrad_bench --list-switches and the tests.
inline constexpr const EnvSwitch* kSpeedSwitches[] = {
    &kBlockCacheSwitch, &kBlockCacheCutSwitch, &kSmallGemmSwitch,       &kSkinnyGemmSwitch,
    &kSkinnyPrefetchL2Switch, &kPoolSpinSwitch, &kBf16SmallInFp32Switch, &kAdamPrefetchSwitch,
    &kNarrowNnTransposedSwitch, &kInferenceWeightsTransposedSwitch, &kSkinnyStreamedGradientSwitch,
    &kSmallGemmBf16Switch, &kInferenceWeightsPackedSwitch, &kSmallGemmAmxSwitch, &kLayerNormRecomputeSwitch,
    &kGradientAsFactorsSwitch, &kBackwardProductsOnOpenblasSwitch, &kMallocNoFastbinsSwitch};

// ---- in a running process (speed_switch_state.cpp) ----

// The value the library acts on now: the environment's, read at the first use (an invalid value
// is an Error there, and at every use after), unless set_speed_switch set it; for
// XTGRAD_MALLOC_NO_FASTBINS what the library set when it loaded (malloc_tuning.hpp).
bool speed_switch_on(const EnvSwitch& s);

// Whether set_speed_switch can flip `s` while the process runs: every speed switch (an entry of
// kSpeedSwitches, by address) but those with a fixed_because: XTGRAD_BLOCK_CACHE and
// XTGRAD_BLOCK_CACHE_CUT, fixed at the first large block, and XTGRAD_MALLOC_NO_FASTBINS, set when
// the library loads (autograd/malloc_tuning.cpp).
bool speed_switch_settable(const EnvSwitch& s);

// Sets `s` for the rest of the process, or until set again: xtgrad_bench --alternate measures a
// switch on against off step by step in one process, so a host whose speed drifts moves both
// sides alike; the tests reach both paths. An Error, changing nothing, for a switch that is not
// settable.
void set_speed_switch(const EnvSwitch& s, bool on);

// The speed switch named `name` (XTGRAD_SMALL_GEMM), or null.
const EnvSwitch* speed_switch_named(std::string_view name);

// What a measurement of `s` must know, as comma-separated words ("" for none): "fixed" where it
// is not settable, then its acts flags' words (env_switch.hpp), e.g. "autocast,inference".
// xtgrad_bench --list-switches prints them after the default; bench/compare_builds.sh reads them.
std::string speed_switch_tags(const EnvSwitch& s);

}  // namespace xtgrad::detail
