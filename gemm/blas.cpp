// Every fp32 matrix product of xtgrad goes through here (gemm/blas.hpp): degenerate sizes,
// small and skinny products to xtgrad's own kernels where they beat the backend, the rest to the
// backend (gemm/gemm_backend.hpp), split over xtgrad's pool when the backend does not thread
// itself. Products with bf16 operands (autocast) enter at gemm/blas_bf16.cpp.
#include <xtgrad/gemm/blas.hpp>

#include <xtgrad/autograd/speed_switches.hpp>
#include <xtgrad/gemm/gemm_backend.hpp>
#include <xtgrad/gemm/gemm_door.hpp>
#include <xtgrad/threads/parallel.hpp>
#include <xtgrad/gemm/skinny_gemm.hpp>
#include <xtgrad/simd/cpu_model.hpp>
#include <xtgrad/gemm/small_gemm.hpp>
#include <xtgrad/gemm/transpose.hpp>
#include <xtgrad/simd/cpu_isa.hpp>
#include "xtgrad_simd_config.hpp"

#include <xtgrad/autograd/array_allocator.hpp>
#include <xtgrad/autograd/error.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace xtgrad {

// ---- what blas_bf16.cpp shares (gemm/gemm_door.hpp) ----------------------------------------------

// C = beta · C for an empty inner dimension or alpha = 0, where BLAS reads neither A nor B
// (beta = 0 writes zeros without reading C; oneDNN's alpha = 0 left a NaN of C in place).
void detail::scale_only(int M, int N, float beta, float* C, int ldc) {
    for (int m = 0; m < M; ++m) {
        float* c = C + static_cast<std::ptrdiff_t>(m) * ldc;
        for (int n = 0; n < N; ++n) c[n] = beta == 0.f ? 0.f : beta * c[n];
    }
}

// The sizes every entry checks before it touches memory: no negative extent, and leading
// dimensions that hold a stored row (A is (M, K), or (K, M) when trans_a; B (K, N) or (N, K); C
// (M, N)). A shorter one made rows overlap, silently; a negative K threw std::length_error.
void detail::check_sizes(const char* who, bool ta, bool tb, int M, int N, int K, int lda, int ldb, int ldc) {
    if (M < 0 || N < 0 || K < 0) fail("{}: negative size M = {}, N = {}, K = {}", who, M, N, K);
    const int a_row = ta ? M : K, b_row = tb ? K : N;
    if (lda < a_row || ldb < b_row || ldc < N)
        fail("{}: a leading dimension shorter than its rows (M = {}, N = {}, K = {}{}{}): lda = {} (at least {}), "
             "ldb = {} (at least {}), ldc = {} (at least {})", who, M, N, K, ta ? ", A transposed" : "",
             tb ? ", B transposed" : "", lda, a_row, ldb, b_row, ldc, N);
}

// XTGRAD_SMALL_GEMM: the environment's, read on the first product, or set_speed_switch's
bool detail::small_gemm_on() { return detail::speed_switch_on(detail::kSmallGemmSwitch); }

namespace {

// One product on `backend`: split over the pool (as the active backend's would be) or one call.
void split_or_call_on(const detail::GemmBackend& backend, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                      const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc) {
    if (!detail::pool_splits(M, N, K, 4.0)) return backend.sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    detail::split_product(trans_a, trans_b, M, N, A, lda, B, ldb, C, ldc,
                  [&](int m, int n, const float* a, const float* b, float* c) {
                      backend.sgemm(trans_a, trans_b, m, n, K, alpha, a, lda, b, ldb, beta, c, ldc);
                  });
}
void split_or_call_as_given(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                            const float* B, int ldb, float beta, float* C, int ldc) {
    split_or_call_on(detail::active_backend(), trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
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
    if (!detail::pool_splits(M, N, K, 4.0)) return block(M, A, C);
    detail::split_product(true, false, M, N, A, lda, B, ldb, C, ldc,
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

// XTGRAD_BACKWARD_PRODUCTS_ON_OPENBLAS: OpenBLAS's table where the switch sends an A·B or Aᵀ·B
// product there and OpenBLAS loads (a machine without libopenblas0 keeps them on oneDNN), else null.
const detail::GemmBackend* backward_products_backend(bool trans_b) {
    if (trans_b || !detail::speed_switch_on(detail::kBackwardProductsOnOpenblasSwitch) ||
        detail::active_backend().threads_itself)  // OpenBLAS is the backend already
        return nullptr;
    static const detail::GemmBackend* const openblas = []() -> const detail::GemmBackend* {
        try {
            return &detail::openblas_backend();  // one thread per call: split over the pool as oneDNN's
        } catch (const Error&) {
            return nullptr;
        }
    }();
    return openblas;
}

// gemm_backend's work: on OpenBLAS where it runs a backward's products faster, reoriented where the
// backend is slow on a narrow C, then split over the pool or one backend call.
void split_or_call(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                   const float* B, int ldb, float beta, float* C, int ldc) {
    if (const detail::GemmBackend* openblas = backward_products_backend(trans_b))
        return split_or_call_on(*openblas, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    if (detail::active_backend().slow_on_narrow_c) {
        if (reorient_tn(trans_a, trans_b, M, N, K)) return tn_through_wide_c(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        if (reorient_nn(trans_a, trans_b, M, N, K))
            return nn_through_transposed_b(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    }
    split_or_call_as_given(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace

bool detail::narrow_nn_transposed() { return detail::speed_switch_on(detail::kNarrowNnTransposedSwitch); }
bool detail::inference_weights_transposed() { return detail::speed_switch_on(detail::kInferenceWeightsTransposedSwitch); }
bool detail::skinny_streamed_gradient() { return detail::speed_switch_on(detail::kSkinnyStreamedGradientSwitch); }

bool nt_faster_as_nn(int M, int N, int K) {
    return std::min({M, N, K}) > kSkinnyRows && !small_gemm_takes(M, N, K) &&
           detail::active_backend().nt_slower_than_nn && detail::inference_weights_transposed();
}

void gemm_backend(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                  const float* B, int ldb, float beta, float* C, int ldc) {
    detail::check_sizes("gemm_backend", trans_a, trans_b, M, N, K, lda, ldb, ldc);
    if (M == 0 || N == 0) return;
    if (K == 0 || alpha == 0.f) return detail::scale_only(M, N, beta, C, ldc);
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
bool skinny_shape(int M, int N, int K) { return M <= 7 || N <= 7 || (K <= 7 && M > kSkinnyRows && N > kSkinnyRows); }

// Whether the skinny kernels beat oneDNN here: on AVX-512 (above), and on the Zen 3's baseline
// (AVX2) kernels against oneDNN's avx2 ones (AMD family 25 but not the Zen 4; build/bench/skinny_bench,
// one thread, skinny over oneDNN): the forward 0.92-0.94x the time, dx 0.94-1.05x, a fresh dW
// 0.49-0.64x (8-14 GB/s written against 5-7). Not on other AVX2-only CPUs, which nobody has measured.
bool skinny_kernels_beat_onednn() {
#if XTGRAD_HAVE_AVX512_KERNELS
    if (active_isa() == Isa::avx512) return true;
#endif
    return active_isa() == Isa::baseline && cpu_model().is_amd_zen3();
}

}  // namespace

// gemm_ld's routing: a small product (the attention core's slices on short sentences) is
// cheaper than a library call's set-up (small_gemm.hpp); a product with a skinny side (a Linear
// or Conv1d layer on a 7-token sentence, its weight gradient over 7 rows) streams the big
// operand once instead of packing it (skinny_gemm.hpp), where that beats the backend (OpenBLAS
// always; oneDNN where the skinny kernels have AVX-512, and on the Zen 3's AVX2: forward, dx and dW); every
// other product goes to the backend.
// XTGRAD_SMALL_GEMM=0 and XTGRAD_SKINNY_GEMM=0 send those products to the backend too (the
// on/off comparison of bench/run.sh --compare-switches); read on each product (speed_switch_on).
namespace {
// route's two doors, in its order; the skinny switch is read first, whichever door is taken
struct Doors {
    bool small, skinny;
};
Doors doors(int M, int N, int K) {
    const bool skinny_on = detail::speed_switch_on(detail::kSkinnyGemmSwitch);
    return {.small = detail::small_gemm_on() && small_gemm_takes(M, N, K),
            .skinny = skinny_on && (detail::active_backend().prefers_skinny_kernels ||
                                    (skinny_kernels_beat_onednn() && skinny_shape(M, N, K)))};
}
}  // namespace

void detail::route(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                   const float* B, int ldb, float beta, float* C, int ldc) {
    const Doors door = doors(M, N, K);
    if (door.small) return small_gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    if (door.skinny && skinny_gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) return;
    split_or_call(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

bool detail::skinny_kernels_route() {
    return detail::active_backend().prefers_skinny_kernels || skinny_kernels_beat_onednn();
}

bool detail::product_on_skinny_tn_kernel(int M, int N, int K) {
    if (M <= 0 || N <= 0 || K <= 0) return false;  // gemm_ld never routes those
    const Doors door = doors(M, N, K);
    return !door.small && door.skinny && skinny_tn_kernel_takes(M, N, K);
}

void gemm_ld(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
             const float* B, int ldb, float beta, float* C, int ldc) {
    detail::check_sizes("gemm_ld", trans_a, trans_b, M, N, K, lda, ldb, ldc);
    if (M == 0 || N == 0) return;
    if (K == 0 || alpha == 0.f) return detail::scale_only(M, N, beta, C, ldc);
    detail::profiled(trans_a, trans_b, M, N, K,
                     [&] { detail::route(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc); });
}

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
          const float* B, float beta, float* C) {
    gemm_ld(trans_a, trans_b, M, N, K, alpha, A, trans_a ? M : K, B, trans_b ? K : N, beta, C, N);
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
