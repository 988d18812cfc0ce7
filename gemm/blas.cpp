// Every matrix product of xtgrad goes through here (gemm/blas.hpp): degenerate sizes,
// skinny products to xtgrad's own kernels where they beat the backend, the rest to the backend
// (gemm/gemm_backend.hpp), split over xtgrad's pool when the backend does not thread itself.
#include <xtgrad/gemm/blas.hpp>

#include <xtgrad/autograd/speed_switches.hpp>
#include <xtgrad/gemm/bf16_convert.hpp>
#include <xtgrad/gemm/gemm_backend.hpp>
#include <xtgrad/gemm/gemm_profile.hpp>
#include <xtgrad/threads/parallel.hpp>
#include <xtgrad/gemm/skinny_gemm.hpp>
#include <xtgrad/gemm/small_gemm.hpp>
#include <xtgrad/gemm/transpose.hpp>
#include <xtgrad/simd/cpu_isa.hpp>
#include "xtgrad_simd_config.hpp"

#include <xtgrad/autograd/array_allocator.hpp>
#include <xtgrad/autograd/autocast.hpp>
#include <xtgrad/autograd/error.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace xtgrad {

namespace {

// A product is split when either its arithmetic or its memory traffic is worth a second core.
// Below ~4 MFLOP (~20 µs on one core) the arithmetic alone does not pay for waking the pool. But
// a skinny product (a Linear layer on a 7-token sentence: 7x512 times 512x512, 3.7 MFLOP) is
// bound by reading its 1 MiB weight from memory (~80 µs), and two cores read it faster than one.
constexpr double kSplitFlops = 4e6;
constexpr double kSplitBytes = 512.0 * 1024;
// Blocks of C's rows or columns handed to a thread are multiples of this (a cache line of floats).
constexpr int kBlock = 16;
// bf16_product_in_fp32's default. bench/bf16_skinny_bench on Zen 5 (a Linear's 3 products over
// 64 MiB of weights, the weight converted once): bf16 took 1.05x fp32's time on 7 rows, 0.87x on
// 8, 0.63x on 16 (1 thread); on 7 rows the weight's conversion alone costs 2/3 of the fp32 products.
constexpr int kDefaultBf16MinSide = 8;

// C (M, N) split into row blocks (M >= N) or column blocks over xtgrad's pool, each block one
// single-threaded backend product: product(m, n, a, b, c) with the block's sizes and the start of
// its operands and result. Row block [m0, m1) of C reads rows m0.. of op(A) (row m0 of A, or
// column m0 of Aᵀ); column block [n0, n1) reads columns n0.. of op(B). Each element of C is
// computed by one call as in the unsplit product: K is never split, nothing is summed twice.
// T: float, or std::uint16_t for bf16 operands.
template <class T, class Product>
void split_product(bool ta, bool tb, int M, int N, const T* A, int lda, const T* B, int ldb, float* C, int ldc,
                   const Product& product) {
    const bool by_rows = M >= N;
    const int extent = by_rows ? M : N;
    const std::size_t blocks = static_cast<std::size_t>((extent + kBlock - 1) / kBlock);
    parallel_for(blocks, 1, [&](std::size_t b0, std::size_t b1) {
        const int i0 = static_cast<int>(b0) * kBlock, i1 = std::min(extent, static_cast<int>(b1) * kBlock);
        const std::ptrdiff_t i = i0;
        if (by_rows)
            product(i1 - i0, N, ta ? A + i : A + i * lda, B, C + i * ldc);
        else
            product(M, i1 - i0, A, tb ? B + i * ldb : B + i, C + i);
    });
}

// Whether a product is worth splitting over the pool: enough arithmetic or memory traffic,
// and wide enough for two blocks.
bool worth_splitting(int M, int N, int K, double operand_bytes) {
    const double flops = 2.0 * M * N * K;
    const double bytes = operand_bytes * (double(M) * K + double(K) * N) + 4.0 * double(M) * N;
    return (flops >= kSplitFlops || bytes >= kSplitBytes) && std::max(M, N) >= 2 * kBlock;
}

// Whether the product goes over xtgrad's pool in blocks (split_product): the backend does not
// thread it itself, both it and the pool have two threads or more, and it is worth it.
bool pool_splits(int M, int N, int K, double operand_bytes) {
    const detail::GemmBackend& backend = detail::active_backend();
    return !backend.threads_itself && backend.threads() >= 2 && num_threads() >= 2 &&
           worth_splitting(M, N, K, operand_bytes);
}

// Runs one product, timed into gemm_profile when profiling is on.
template <class Route>
void profiled(bool ta, bool tb, int M, int N, int K, const Route& route) {
    if (!gemm_profiling()) return route();
    const auto t0 = std::chrono::steady_clock::now();
    route();
    detail::record_gemm(ta, tb, M, N, K,
                        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
}

// C = beta · C for an empty inner dimension or alpha = 0, where BLAS reads neither A nor B
// (beta = 0 writes zeros without reading C; oneDNN's alpha = 0 left a NaN of C in place).
void scale_only(int M, int N, float beta, float* C, int ldc) {
    for (int m = 0; m < M; ++m) {
        float* c = C + static_cast<std::ptrdiff_t>(m) * ldc;
        for (int n = 0; n < N; ++n) c[n] = beta == 0.f ? 0.f : beta * c[n];
    }
}

// The sizes every entry checks before it touches memory: no negative extent, and leading
// dimensions that hold a stored row (A is (M, K), or (K, M) when trans_a; B (K, N) or (N, K); C
// (M, N)). A shorter one made rows overlap, silently; a negative K threw std::length_error.
void check_sizes(const char* who, bool ta, bool tb, int M, int N, int K, int lda, int ldb, int ldc) {
    if (M < 0 || N < 0 || K < 0) fail("{}: negative size M = {}, N = {}, K = {}", who, M, N, K);
    const int a_row = ta ? M : K, b_row = tb ? K : N;
    if (lda < a_row || ldb < b_row || ldc < N)
        fail("{}: a leading dimension shorter than its rows (M = {}, N = {}, K = {}{}{}): lda = {} (at least {}), "
             "ldb = {} (at least {}), ldc = {} (at least {})", who, M, N, K, ta ? ", A transposed" : "",
             tb ? ", B transposed" : "", lda, a_row, ldb, b_row, ldc, N);
}

// One product on the backend: split over the pool or one call.
void split_or_call_as_given(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                            const float* B, int ldb, float beta, float* C, int ldc) {
    const detail::GemmBackend& backend = detail::active_backend();
    if (!pool_splits(M, N, K, 4.0)) return backend.sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    split_product(trans_a, trans_b, M, N, A, lda, B, ldb, C, ldc,
                  [&](int m, int n, const float* a, const float* b, float* c) {
                      backend.sgemm(trans_a, trans_b, m, n, K, alpha, a, lda, b, ldb, beta, c, ldc);
                  });
}

// Products with a narrow C, reoriented. oneDNN's sgemm (2.6, AVX-512; Zen 5, one thread) runs a
// product whose C has at most 512 columns and more rows below its speed on a wide C:
//   Aᵀ·B, (M, N, K) = (1024-4096, 256-512, 3200): 157-200 GFLOP/s; the same product as
//     Cᵀ = Bᵀ·A (C wide, then transposed into place) 209-223. A feed-forward layer's first
//     weight gradient dW1 = dyᵀ·x, (2048, 512): ~20 % faster.
//   A·B, N = 256-512, K = 256-2048: 203-221; A·(Bᵀ)ᵀ with B transposed first 206-236 (K = 4000
//     on two threads: 3-5 % slower). The input gradient dx = dy·W of a layer with 512 inputs
//     (K = 512, 2048): 8-10 % faster. Not on every CPU: an Intel Xeon (family 6 model 207) runs
//     them as stored at 159-167 and with B transposed at 148-157 (5-12 % slower; its Aᵀ·B gains
//     as on Zen 5, 117 -> 147 for dW1), nor the Zen 4 (3-10 % slower), so the CPU decides
//     (XTGRAD_NARROW_NN_TRANSPOSED, autograd/speed_switches.cpp: the Zen 5 alone).
// With 1024 or more columns both orientations run at 225-239. The transposes read and write
// K·N (B) or M·N (C) floats, ~1-3 % of the product. bench/narrow_product_probe measures both
// orientations on the CPU at hand.
constexpr int kNarrowColumns = 512;
constexpr double kMinReorientedMacs = 1 << 22;  // ~8 MFLOP: smaller products keep their shape
// C's transpose costs ~0.4 ns per element (gemm/transpose.cpp), ~6 % of a (2048, 512) product over
// 640 rows and 12 % over 320: narrow_product_probe, three runs, as stored → reoriented, GFLOP/s:
// tutorial D's decoder (640 rows) 180-203 → 202-210, its encoder (320 rows) 195-216 → 173-197.
constexpr int kMinReorientedTnDepth = 512;

bool reorient_tn(bool ta, bool tb, int M, int N, int K) {
    return ta && !tb && N <= kNarrowColumns && M >= 2 * N && K >= kMinReorientedTnDepth &&
           double(M) * N * K >= kMinReorientedMacs;
}
bool reorient_nn(bool ta, bool tb, int M, int N, int K) {
    return !ta && !tb && N <= kNarrowColumns && M >= 4 * N && K <= 2048 &&
           double(M) * N * K >= kMinReorientedMacs && detail::narrow_nn_transposed();
}

// A transposed operand or result for the length of one product, from the arrays' allocator (its
// block cache hands the same blocks back to the next step's activations; a buffer kept per
// thread would add its largest size to the peak resident memory). Uninitialised.
class TransposeScratch {
public:
    explicit TransposeScratch(std::size_t floats)
        : bytes_(floats * sizeof(float)), data_(static_cast<float*>(memory::allocate(bytes_))) {}
    ~TransposeScratch() { memory::deallocate(data_, bytes_); }
    TransposeScratch(const TransposeScratch&) = delete;
    TransposeScratch& operator=(const TransposeScratch&) = delete;
    float* data() const { return data_; }

private:
    std::size_t bytes_;
    float* data_;
};

// C (M, N) = alpha · Aᵀ·B + beta · C, A stored (K, M), B (K, N), C narrow: each row block of C
// (split over the pool as usual) computed as T (N, m) = alpha · Bᵀ·A_block, wide, then
// C_block = Tᵀ + beta · C_block.
void tn_through_wide_c(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                       float* C, int ldc) {
    const auto block = [&](int m, const float* a, float* c) {
        const TransposeScratch t(static_cast<std::size_t>(m) * N);
        detail::active_backend().sgemm(true, false, N, m, K, alpha, B, ldb, a, lda, 0.f, t.data(), m);
        detail::add_transposed(t.data(), m, N, m, beta, c, ldc);
    };
    if (!pool_splits(M, N, K, 4.0)) return block(M, A, C);
    split_product(true, false, M, N, A, lda, B, ldb, C, ldc,
                  [&](int m, int, const float* a, const float*, float* c) { block(m, a, c); });
}

// C (M, N) = alpha · A·B + beta · C with B (K, N) narrow: B transposed once into (N, K) (split over
// the pool by B's rows), then the product A·(Bᵀ)ᵀ.
void nn_through_transposed_b(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                             float beta, float* C, int ldc) {
    const TransposeScratch bt(static_cast<std::size_t>(K) * N);
    float* const out = bt.data();
    detail::transpose_on_pool(B, K, N, ldb, out, K);
    split_or_call_as_given(false, true, M, N, K, alpha, A, lda, out, K, beta, C, ldc);
}

// gemm_backend's work: reoriented where the backend is slow on a narrow C, then split over the
// pool or one backend call.
void split_or_call(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                   const float* B, int ldb, float beta, float* C, int ldc) {
    if (detail::active_backend().slow_on_narrow_c) {
        if (reorient_tn(trans_a, trans_b, M, N, K)) return tn_through_wide_c(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        if (reorient_nn(trans_a, trans_b, M, N, K))
            return nn_through_transposed_b(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    }
    split_or_call_as_given(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace

namespace {
detail::SettableSwitch narrow_nn_switch{detail::kNarrowNnTransposedSwitch};
detail::SettableSwitch inference_transposed_switch{detail::kInferenceWeightsTransposedSwitch};
detail::SettableSwitch skinny_streamed_gradient_switch{detail::kSkinnyStreamedGradientSwitch};
detail::SettableSwitch small_gemm_bf16_switch{detail::kSmallGemmBf16Switch};

// XTGRAD_SMALL_GEMM, read once, on the first product
bool small_gemm_on() {
    static const bool on = detail::read_switch(detail::kSmallGemmSwitch);
    return on;
}
}  // namespace

bool detail::narrow_nn_transposed() { return narrow_nn_switch.get(); }
void detail::set_narrow_nn_transposed(bool transposed) { narrow_nn_switch.set(transposed); }
bool detail::inference_weights_transposed() { return inference_transposed_switch.get(); }
void detail::set_inference_weights_transposed(bool transposed) { inference_transposed_switch.set(transposed); }
bool detail::skinny_streamed_gradient() { return skinny_streamed_gradient_switch.get(); }
void detail::set_skinny_streamed_gradient(bool streamed) { skinny_streamed_gradient_switch.set(streamed); }
// XTGRAD_SMALL_GEMM=0 sends them to the backend's bf16 product with the other small ones; the
// switch's default asks the kernel and the rate (speed_switches.cpp), and a 1 where the kernel
// cannot run leaves them in fp32.
bool detail::medium_blocks_in_bf16() {
    return small_gemm_on() && small_gemm_bf16_switch.get() && small_gemm_bf16_available();
}
void detail::set_small_gemm_bf16(bool on) { small_gemm_bf16_switch.set(on); }

// Attention's medium blocks under bf16 autocast in small_gemm_bf16 (gemm/small_gemm_bf16.cpp):
// its gain is arithmetic, two bf16 products per fp32 lane and instruction, so it is decided by
// the rate that sets it, measured at start-up (autocast::bf16_dot_products_pay: vdpbf16ps at >=
// 1.25x the fp32 FMAs), not by family. On the Zen 4 (~2x): seed-b's bf16 step 1.02-1.03x faster
// at batch 16 and 64, every one of 3 alternating rounds. The Zen 5 passes the same test (its
// bf16 products ran at 85-95 % of its vdpbf16ps peak, docs/performance.md); the Intel Xeon's
// vdpbf16ps runs at half its FMA rate, so it fails it.
bool detail::small_gemm_bf16_by_cpu() { return small_gemm_bf16_available() && autocast::bf16_dot_products_pay(); }

bool nt_faster_as_nn(int M, int N, int K) {
    return std::min({M, N, K}) > kSkinnyRows && !small_gemm_takes(M, N, K) &&
           detail::active_backend().nt_slower_than_nn && detail::inference_weights_transposed();
}

void gemm_backend(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                  const float* B, int ldb, float beta, float* C, int ldc) {
    check_sizes("gemm_backend", trans_a, trans_b, M, N, K, lda, ldb, ldc);
    if (M == 0 || N == 0) return;
    if (K == 0 || alpha == 0.f) return scale_only(M, N, beta, C, ldc);
    split_or_call(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

namespace {
// A product with at most 7 rows or columns of C (a Linear's forward x·Wᵀ and dx = dy·W on a
// 7-token sentence; a Conv1d's W·x and Wᵀ·dy on 7 positions, the same through Cᵀ), or with an
// inner dimension of at most 7 and both sides longer than kSkinnyRows (its weight gradient
// dW = dyᵀ·x, skinny_gemm's skinny_tn case), where the skinny kernels run on AVX-512: they
// stream the weight 1.4-1.9x faster than oneDNN, and write the gradient with plain stores at
// ~55 GB/s into cache, where oneDNN wrote the (512, 2048) one at ~28 (gemm/skinny_avx512.cpp,
// docs/performance.md "The Winter Games step").
bool skinny_on_avx512(int M, int N, int K) {
#if XTGRAD_HAVE_AVX512_KERNELS
    return active_isa() == Isa::avx512 &&
           (M <= 7 || N <= 7 || (K <= 7 && M > kSkinnyRows && N > kSkinnyRows));
#else
    (void)M, (void)N, (void)K;
    return false;
#endif
}

// gemm_ld's routing: a small product (the attention core's slices on short sentences) is
// cheaper than a library call's set-up (small_gemm.hpp); a product with a skinny side (a Linear
// or Conv1d layer on a 7-token sentence, its weight gradient over 7 rows) streams the big
// operand once instead of packing it (skinny_gemm.hpp), where that beats the backend (OpenBLAS
// always; oneDNN where the skinny kernels have AVX-512: forward, dx and dW); every
// other product goes to the backend.
// XTGRAD_SMALL_GEMM=0 and XTGRAD_SKINNY_GEMM=0 send those products to the backend too (the
// on/off comparison of bench/run.sh --compare-switches); read once, on the first product.
void route(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
           int ldb, float beta, float* C, int ldc) {
    static const bool skinny_on = detail::read_switch(detail::kSkinnyGemmSwitch);
    if (small_gemm_on() && small_gemm_takes(M, N, K))
        return small_gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    if (skinny_on && (detail::active_backend().prefers_skinny_kernels || skinny_on_avx512(M, N, K)) &&
        skinny_gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc))
        return;
    split_or_call(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
}  // namespace

void gemm_ld(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
             const float* B, int ldb, float beta, float* C, int ldc) {
    check_sizes("gemm_ld", trans_a, trans_b, M, N, K, lda, ldb, ldc);
    if (M == 0 || N == 0) return;
    if (K == 0 || alpha == 0.f) return scale_only(M, N, beta, C, ldc);
    profiled(trans_a, trans_b, M, N, K, [&] { route(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc); });
}

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
          const float* B, float beta, float* C) {
    gemm_ld(trans_a, trans_b, M, N, K, alpha, A, trans_a ? M : K, B, trans_b ? K : N, beta, C, N);
}

// ---- bf16 operands (autocast) -----------------------------------------------------------------

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
// Below this many rows on a side, a bf16 product runs in fp32 (bf16_product_in_fp32); -1 until
// first read: XTGRAD_BF16_SMALL_IN_FP32=0 makes it 0 (only small_gemm_fits stays in fp32).
std::atomic<int> min_bf16_side{-1};
}  // namespace

int detail::bf16_min_side() {
    int side = min_bf16_side.load(std::memory_order_relaxed);
    if (side >= 0) return side;
    int unread = -1;
    const int initial = detail::read_switch(detail::kBf16SmallInFp32Switch) ? kDefaultBf16MinSide : 0;
    min_bf16_side.compare_exchange_strong(unread, initial, std::memory_order_relaxed);
    return min_bf16_side.load(std::memory_order_relaxed);
}
void detail::set_bf16_min_side(int rows) { min_bf16_side.store(std::max(0, rows), std::memory_order_relaxed); }

bool bf16_product_in_fp32(int M, int N, int K) {
    return small_gemm_fits(M, N, K) || std::min({M, N, K}) < detail::bf16_min_side() ||
           (small_gemm_on() && small_gemm_takes(M, N, K) && !detail::medium_blocks_in_bf16());
}

namespace {

// C (M, N) = alpha · op(A) · op(B) + beta · C with A and B bf16, packed (lda / ldb their row
// lengths); split over the pool as fp32 products are, each block one single-threaded call.
void bf16_split_or_call(bool ta, bool tb, int M, int N, int K, float alpha, const std::uint16_t* A, int lda,
                        const std::uint16_t* B, int ldb, float beta, float* C, int ldc) {
    const detail::GemmBackend& backend = detail::active_backend();
    if (!pool_splits(M, N, K, 2.0)) return backend.gemm_bf16(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    split_product(ta, tb, M, N, A, lda, B, ldb, C, ldc,
                  [&](int m, int n, const std::uint16_t* a, const std::uint16_t* b, float* c) {
                      backend.gemm_bf16(ta, tb, m, n, K, alpha, a, lda, b, ldb, beta, c, ldc);
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
void route_bf16(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const std::uint16_t* a_bf16,
                const float* B, int ldb, const std::uint16_t* b_bf16, float beta, float* C, int ldc) {
    if (bf16_product_in_fp32(M, N, K)) return route(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    // (a copy given converted may be the operand's only form)
    if (!a_bf16 && !b_bf16 && small_gemm_takes(M, N, K) && detail::medium_blocks_in_bf16())
        return small_gemm_bf16(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
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
    bf16_split_or_call(ta, tb, M, N, K, alpha, a_bf16, a_cols, b_bf16, b_cols, beta, C, ldc);
}

}  // namespace

namespace {
void gemm_ld_bf16(DType operands, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                  const std::uint16_t* a_bf16, const float* B, int ldb, const std::uint16_t* b_bf16, float beta, float* C,
                  int ldc) {
    if (operands == DType::fp32) return gemm_ld(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    // where bf16 would be slow (or absent), refuse as autocast::Scope does: never silently slow
    if (const std::string unsupported = autocast::bf16_unsupported_reason(); !unsupported.empty())
        fail("gemm (bf16): {}", unsupported);
    check_sizes("gemm (bf16)", trans_a, trans_b, M, N, K, lda, ldb, ldc);
    if (M == 0 || N == 0) return;
    if (K == 0 || alpha == 0.f) return scale_only(M, N, beta, C, ldc);
    profiled(trans_a, trans_b, M, N, K,
             [&] { route_bf16(trans_a, trans_b, M, N, K, alpha, A, lda, a_bf16, B, ldb, b_bf16, beta, C, ldc); });
}
}  // namespace

void gemm_ld(DType operands, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
             const float* B, int ldb, const std::uint16_t* b_bf16, float beta, float* C, int ldc) {
    gemm_ld_bf16(operands, trans_a, trans_b, M, N, K, alpha, A, lda, nullptr, B, ldb, b_bf16, beta, C, ldc);
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
                 beta, C, N);
}

void gemm(DType operands, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, const float* B,
          float beta, float* C) {
    gemm(operands, trans_a, trans_b, M, N, K, alpha, A, B, nullptr, beta, C);
}

const char* gemm_backend_name() { return detail::active_backend().name; }
const char* gemm_backend_kernel() { return detail::active_backend().kernel(); }

void set_blas_threads(int n) { detail::active_backend().set_threads(n); }
int blas_threads() { return detail::active_backend().threads(); }

BlasThreadsScope::BlasThreadsScope(int n) : previous_(blas_threads()) {
    if (n != previous_) set_blas_threads(n);
}
BlasThreadsScope::~BlasThreadsScope() {
    if (blas_threads() != previous_) set_blas_threads(previous_);
}

namespace {
thread_local int read_at_once_depth = 0;  // ResultReadAtOnce scopes open on this thread
}  // namespace
ResultReadAtOnce::ResultReadAtOnce() { ++read_at_once_depth; }
ResultReadAtOnce::~ResultReadAtOnce() { --read_at_once_depth; }
bool detail::result_read_at_once() { return read_at_once_depth > 0; }

void for_each_slice(std::size_t count, double flops_per_slice, bool independent,
                    const std::function<void(std::size_t)>& product) {
    constexpr double kMinParallelFlops = 1 << 20;  // ~10-20 µs of GEMM
    if (!independent || count < 2 || num_threads() < 2 || flops_per_slice * static_cast<double>(count) < kMinParallelFlops) {
        for (std::size_t c = 0; c < count; ++c) product(c);
        return;
    }
    BlasThreadsScope single(1);
    parallel_for(count, 1, [&](std::size_t c0, std::size_t c1) {
        for (std::size_t c = c0; c < c1; ++c) product(c);
    });
}

}  // namespace xtgrad
