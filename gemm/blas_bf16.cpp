// Products with bf16 operands (gemm/blas.hpp's DType overloads, autocast): which run in bf16 at
// all, attention's medium blocks in small_gemm's bf16 kernel, the rest converted once and run on
// the backend's bf16 product, split over the pool as fp32 products are (gemm/gemm_door.hpp).
#include <xtgrad/gemm/blas.hpp>

#include <xtgrad/autograd/autocast.hpp>
#include <xtgrad/autograd/env_switch.hpp>
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/speed_switches.hpp>
#include <xtgrad/gemm/bf16_convert.hpp>
#include <xtgrad/gemm/gemm_backend.hpp>
#include <xtgrad/gemm/gemm_door.hpp>
#include <xtgrad/gemm/small_gemm.hpp>
#include <xtgrad/simd/cpu_model.hpp>
#include <xtgrad/threads/parallel.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace xtgrad {

namespace {
// bf16_product_in_fp32's default. bench/bf16_skinny_bench on Zen 5 (a Linear's 3 products over
// 64 MiB of weights, the weight converted once): bf16 took 1.05x fp32's time on 7 rows, 0.87x on
// 8, 0.63x on 16 (1 thread); on 7 rows the weight's conversion alone costs 2/3 of the fp32 products.
constexpr int kDefaultBf16MinSide = 8;
}  // namespace

// Attention's medium blocks under bf16 autocast in small_gemm_bf16 (gemm/small_gemm_bf16.cpp):
// its gain is arithmetic, two bf16 products per fp32 lane and instruction, so it is decided by
// the rate that sets it, measured at start-up (autocast::bf16_dot_products_pay: vdpbf16ps at >=
// 1.25x the fp32 FMAs), not by family. On the Zen 4 (~2x): seed-b's bf16 step 1.02-1.03x faster
// at batch 16 and 64, every one of 3 alternating rounds. The Zen 5 passes the same test (its
// bf16 products ran at 85-95 % of its vdpbf16ps peak, docs/performance.md); the Intel Xeon's
// vdpbf16ps runs at half its FMA rate, so it fails it, but the kernel's AMX tiles take the blocks
// faster than fp32 there (seed-b's bf16 step: docs/performance.md). From the CPU alone, not from
// XTGRAD_SMALL_GEMM_AMX's value: a default read once must not depend on when it was read.
bool detail::small_gemm_bf16_by_cpu() {
    return small_gemm_bf16_available() && (autocast::bf16_dot_products_pay() || small_gemm_amx_available());
}

// Whether they run there: XTGRAD_SMALL_GEMM=0 sends them to the backend's bf16 product with the
// other small ones; the switch's default asks the kernel and the rate (speed_switches.cpp), and a
// 1 where the kernel cannot run leaves them in fp32.
bool detail::medium_blocks_in_bf16() {
    return small_gemm_on() && detail::speed_switch_on(detail::kSmallGemmBf16Switch) && small_gemm_bf16_available();
}

// src (rows, cols), row stride ld -> dst (rows, cols) packed (row stride cols). Split over the
// pool by rows when big (serial inside a pool chunk, e.g. under for_each_slice); each row through
// detail::bf16_row (AVX512-BF16's conversion instruction where the CPU has it). 5-10 % of the
// product it feeds, which is why autocast keeps each weight's copy per version.
void convert_to_bf16(const float* src, int rows, int cols, int ld, std::uint16_t* dst) {
    parallel_rows(static_cast<std::size_t>(rows), static_cast<std::size_t>(cols), [&](std::size_t r0, std::size_t r1) {
        for (std::size_t r = r0; r < r1; ++r) {
            detail::bf16_row(src + r * static_cast<std::size_t>(ld), static_cast<std::size_t>(cols),
                             dst + r * static_cast<std::size_t>(cols));
        }
    });
}

namespace {
// Below this many rows on a side, a bf16 product runs in fp32 (bf16_product_in_fp32): the tests'
// set_bf16_min_side, or -1 (unset): kDefaultBf16MinSide where XTGRAD_BF16_SMALL_IN_FP32 is on,
// else 0 (only small_gemm_fits stays in fp32).
std::atomic<int> min_bf16_side{-1};
}  // namespace

int detail::bf16_min_side() {
    const int side = min_bf16_side.load(std::memory_order_relaxed);
    if (side >= 0) return side;
    return detail::speed_switch_on(detail::kBf16SmallInFp32Switch) ? kDefaultBf16MinSide : 0;
}
void detail::set_bf16_min_side(int rows) { min_bf16_side.store(std::max(0, rows), std::memory_order_relaxed); }

bool bf16_product_in_fp32(int M, int N, int K) {
    return small_gemm_fits(M, N, K) || std::min({M, N, K}) < detail::bf16_min_side() ||
           (detail::small_gemm_on() && small_gemm_takes(M, N, K) && !detail::medium_blocks_in_bf16());
}

namespace {

// C (M, N) = alpha · op(A) · op(B) (+ bias) + beta · C with A and B bf16, packed (lda / ldb
// their row lengths); split over the pool as fp32 products are, each block one single-threaded
// call (a block of C's columns takes the bias's same columns).
void bf16_split_or_call(bool ta, bool tb, int M, int N, int K, float alpha, const std::uint16_t* A, int lda,
                        const std::uint16_t* B, int ldb, const float* bias, float beta, float* C, int ldc) {
    const detail::GemmBackend& backend = detail::active_backend();
    if (!detail::pool_splits(M, N, K, 2.0))
        return backend.gemm_bf16(ta, tb, M, N, K, alpha, A, lda, B, ldb, bias, beta, C, ldc);
    detail::split_product(ta, tb, M, N, A, lda, B, ldb, C, ldc,
                  [&](int m, int n, const std::uint16_t* a, const std::uint16_t* b, float* c) {
                      const float* block_bias = bias ? bias + (c - C) % ldc : nullptr;
                      backend.gemm_bf16(ta, tb, m, n, K, alpha, a, lda, b, ldb, block_bias, beta, c, ldc);
                  });
}

// A bf16 product: op(A) and op(B) rounded to bf16, products summed in fp32. Products where bf16
// would not pay (bf16_product_in_fp32: small ones, which small_gemm runs in fp32 arithmetic
// anyway, and skinny ones) run in fp32, unrounded. The medium blocks small_gemm takes (the
// attention blocks of sentences up to ~128 tokens) go to its bf16 kernel where
// medium_blocks_in_bf16, which rounds as it packs, unless an operand comes converted: oneDNN's
// bf16 matmul, set up per block, ran them slower than fp32 small_gemm. The others convert both
// operands to bf16 once (in their stored orientation, packed; unless given converted) and run
// the backend's bf16 product. The buffers are this thread's, kept and reused.
// bias (N, or null; with alpha = 1 and beta = 0 only, gemm_bias) is added in the backend's
// epilogue where its bf16 product runs, else by one pass after the product.
void route_bf16(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const std::uint16_t* a_bf16,
                const float* B, int ldb, const std::uint16_t* b_bf16, const float* bias, float beta, float* C, int ldc) {
    if (bf16_product_in_fp32(M, N, K)) {
        detail::route(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return add_bias_rows(C, M, N, ldc, bias);
    }
    // (a copy given converted may be the operand's only form)
    if (!a_bf16 && !b_bf16 && small_gemm_takes(M, N, K) && detail::medium_blocks_in_bf16()) {
        small_gemm_bf16(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return add_bias_rows(C, M, N, ldc, bias);
    }
    // stored shapes: A is (M, K), or (K, M) when transposed; B is (K, N), or (N, K)
    const int a_rows = ta ? K : M, a_cols = ta ? M : K, b_rows = tb ? N : K, b_cols = tb ? K : N;
    const std::size_t a_size = static_cast<std::size_t>(a_rows) * a_cols, b_size = static_cast<std::size_t>(b_rows) * b_cols;
    // operands given in bf16 (a cached weight, a gradient converted once for two products) are
    // not converted again
    const std::size_t a_scratch = a_bf16 ? 0 : a_size, b_scratch = b_bf16 ? 0 : b_size;
    thread_local std::vector<std::uint16_t> packed;
    if (packed.size() < a_scratch + b_scratch) packed.resize(a_scratch + b_scratch);
    if (!a_bf16) {
        convert_to_bf16(A, a_rows, a_cols, lda, packed.data());
        a_bf16 = packed.data();
    }
    if (!b_bf16) {
        convert_to_bf16(B, b_rows, b_cols, ldb, packed.data() + a_scratch);
        b_bf16 = packed.data() + a_scratch;
    }
    bf16_split_or_call(ta, tb, M, N, K, alpha, a_bf16, a_cols, b_bf16, b_cols, bias, beta, C, ldc);
}

}  // namespace

namespace {
void gemm_ld_bf16(DType operands, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                  const std::uint16_t* a_bf16, const float* B, int ldb, const std::uint16_t* b_bf16, const float* bias,
                  float beta, float* C, int ldc) {
    if (operands == DType::fp32) {
        gemm_ld(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return add_bias_rows(C, M, N, ldc, bias);
    }
    // where bf16 would be slow (or absent), refuse as autocast::Scope does: never silently slow
    if (const std::string unsupported = autocast::bf16_unsupported_reason(); !unsupported.empty())
        fail("gemm (bf16): {}", unsupported);
    detail::check_sizes("gemm (bf16)", trans_a, trans_b, M, N, K, lda, ldb, ldc);
    if (M == 0 || N == 0) return;
    if (K == 0 || alpha == 0.f) {
        detail::scale_only(M, N, beta, C, ldc);
        return add_bias_rows(C, M, N, ldc, bias);
    }
    detail::profiled(trans_a, trans_b, M, N, K,
             [&] { route_bf16(trans_a, trans_b, M, N, K, alpha, A, lda, a_bf16, B, ldb, b_bf16, bias, beta, C, ldc); });
}
}  // namespace

void gemm_ld(DType operands, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
             const float* B, int ldb, const std::uint16_t* b_bf16, float beta, float* C, int ldc) {
    gemm_ld_bf16(operands, trans_a, trans_b, M, N, K, alpha, A, lda, nullptr, B, ldb, b_bf16, nullptr, beta, C, ldc);
}

void gemm_ld(DType operands, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
             const float* B, int ldb, float beta, float* C, int ldc) {
    gemm_ld(operands, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, nullptr, beta, C, ldc);
}

void gemm(DType operands, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, const float* B,
          const std::uint16_t* b_bf16, float beta, float* C) {
    gemm_ld(operands, trans_a, trans_b, M, N, K, alpha, A, trans_a ? M : K, B, trans_b ? K : N, b_bf16, beta, C, N);
}

void gemm(DType operands, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
          const std::uint16_t* a_bf16, const float* B, const std::uint16_t* b_bf16, float beta, float* C) {
    gemm_ld_bf16(operands, trans_a, trans_b, M, N, K, alpha, A, trans_a ? M : K, a_bf16, B, trans_b ? K : N, b_bf16,
                 nullptr, beta, C, N);
}

void gemm_bias(DType operands, bool trans_a, bool trans_b, int M, int N, int K, const float* A,
               const std::uint16_t* a_bf16, const float* B, const std::uint16_t* b_bf16, const float* bias, float* C) {
    detail::check_sizes("gemm_bias", trans_a, trans_b, M, N, K, trans_a ? M : K, trans_b ? K : N, N);
    if (M == 0 || N == 0) return;
    if (!C || (K > 0 && (!A || !B)))
        fail("gemm_bias: null {} for the ({}, {}, {}) product (A and B in fp32 are read wherever it runs in fp32)",
             !C ? "C" : !A ? "A" : "B", M, N, K);
    // as addresses: the pointers need not point into one array
    const auto at = [](const float* p) { return reinterpret_cast<std::uintptr_t>(p); };
    const std::uintptr_t c_end = at(C) + static_cast<std::uintptr_t>(M) * static_cast<std::uintptr_t>(N) * sizeof(float);
    if (bias && at(bias) + static_cast<std::uintptr_t>(N) * sizeof(float) > at(C) && at(bias) < c_end)
        fail("gemm_bias: the bias ({} floats) overlaps C ({} x {}), which the product writes before the bias is read", N,
             M, N);
    gemm_ld_bf16(operands, trans_a, trans_b, M, N, K, 1.f, A, trans_a ? M : K, a_bf16, B, trans_b ? K : N, b_bf16, bias,
                 0.f, C, N);
}

std::shared_ptr<const void> pack_bf16_weight(int M, int N, int K, const std::uint16_t* w16) {
    const detail::GemmBackend& backend = detail::active_backend();
    if (!backend.pack_bf16_b || M <= 0 || N <= 0 || K <= 0 || !w16) return nullptr;
    if (!autocast::bf16_unsupported_reason().empty()) return nullptr;  // no bf16 product to pack for
    return backend.pack_bf16_b(true, M, N, K, w16, K);
}

void gemm_bias_packed_weight(int M, int N, int K, const std::uint16_t* x16, const std::uint16_t* w16,
                             const void* packed, const float* bias, float* C) {
    if (M <= 0 || N <= 0 || K <= 0 || !x16 || !w16 || !packed || !C)
        fail("gemm_bias_packed_weight: ({}, {}, {}) needs positive sizes and x16, w16, the packed copy and C, got{}{}{}{}",
             M, N, K, x16 ? "" : " x16 null", w16 ? "" : " w16 null", packed ? "" : " packed null", C ? "" : " C null");
    const detail::GemmBackend& backend = detail::active_backend();
    if (!backend.gemm_bf16_packed)
        fail("gemm_bias_packed_weight: the {} backend has no packed bf16 products (pack_bf16_weight gives no copy there)",
             backend.name);
    // where bf16 would be slow (or absent), refuse as gemm_bias(DType::bf16) does
    if (const std::string unsupported = autocast::bf16_unsupported_reason(); !unsupported.empty())
        fail("gemm_bias_packed_weight: {}", unsupported);
    // a share of the rows: on the packed copy, or on w16 where the backend cannot
    const auto rows = [&](int m, const std::uint16_t* x, float* c) {
        if (!backend.gemm_bf16_packed(m, N, K, x, K, packed, bias, c, N))
            backend.gemm_bf16(false, true, m, N, K, 1.f, x, K, w16, K, bias, 0.f, c, N);
    };
    detail::profiled(false, true, M, N, K, [&] {
        if (!detail::pool_splits(M, N, K, 2.0) || M < 2 * detail::kBlock) return rows(M, x16, C);
        // by rows only: every share reads the whole packed copy
        const std::size_t blocks = static_cast<std::size_t>((M + detail::kBlock - 1) / detail::kBlock);
        parallel_for(blocks, 1, [&](std::size_t b0, std::size_t b1) {
            const int i0 = static_cast<int>(b0) * detail::kBlock, i1 = std::min(M, static_cast<int>(b1) * detail::kBlock);
            rows(i1 - i0, x16 + static_cast<std::ptrdiff_t>(i0) * K, C + static_cast<std::ptrdiff_t>(i0) * N);
        });
    });
}

// XTGRAD_INFERENCE_WEIGHTS_PACKED's default, one process per round, inferences alternating
// (docs/performance.md): where oneDNN runs AMX (the Intel Xeon 6/207 guest: bf16 inference 1.10x /
// 1.20x faster on seed-d at 1 / 2 threads, 1.22x on seed-b's batch of 16), on the Zen 5 (AMD
// family 26, oneDNN's avx512_core_bf16: 1.07-1.08x / 1.12-1.15x, seed-b 1.05-1.09x, 6 rounds) and
// on the Zen 4 (avx512_core_bf16 too: seed-d 1.06x / 1.11-1.12x, on faster in 38 of 40 and 40 of
// 40 pairs, seed-b 1.04x in 21 of 24; 8 rounds in two runs). Off elsewhere (the Zen 3 has no
// bf16 products). Here, not in speed_switches.cpp, as small_gemm_bf16_by_cpu.
bool detail::inference_weights_packed_by_cpu() {
    const detail::GemmBackend& backend = detail::active_backend();
    return backend.pack_bf16_b && (std::string_view(backend.kernel()) == "avx512_core_amx" ||
                                   cpu_model().is_amd_zen4() || cpu_model().is_amd(26));
}

bool inference_weights_packed() {
    return detail::active_backend().pack_bf16_b && detail::speed_switch_on(detail::kInferenceWeightsPackedSwitch);
}

void add_bias_rows(float* C, int M, int N, int ldc, const float* bias) {
    if (M < 0 || N < 0 || ldc < N)
        fail("add_bias_rows: M = {} and N = {} must not be negative, and ldc = {} at least N", M, N, ldc);
    if (!bias || M == 0 || N == 0) return;
    const std::size_t cols = static_cast<std::size_t>(N), ld = static_cast<std::size_t>(ldc);
    parallel_rows(static_cast<std::size_t>(M), cols, [&](std::size_t i0, std::size_t i1) {
        const float* __restrict b = bias;
        for (std::size_t i = i0; i < i1; ++i) {
            float* __restrict row = C + i * ld;
            for (std::size_t j = 0; j < cols; ++j) row[j] += b[j];
        }
    });
}

void gemm(DType operands, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, const float* B,
          float beta, float* C) {
    gemm(operands, trans_a, trans_b, M, N, K, alpha, A, B, nullptr, beta, C);
}

}  // namespace xtgrad
