// The one door to the GEMM backend (oneDNN or OpenBLAS: XTGRAD_GEMM_BACKEND, else the meson
// option `gemm`; gemm/gemm_backend.hpp; with oneDNN, A·B and Aᵀ·B may run on OpenBLAS:
// XTGRAD_BACKWARD_PRODUCTS_ON_OPENBLAS, by CPU). Row-major C (M, N) = alpha * op(A) (M, K) · op(B) (K, N) + beta * C,
// op = transpose when the flag is set. beta = 1 accumulates (gradients add into .grad in place);
// beta = 0 never reads C (it may be uninitialised). K = 0 or alpha = 0 gives C = beta * C, A and B
// not read (BLAS's rule). A negative size, or a leading dimension shorter than the row it strides
// over, is an Error naming them.
#pragma once

#include <xtgrad/gemm/dtype.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <functional>

namespace xtgrad {

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
          const float* B, float beta, float* C);

// Same with explicit leading dimensions, for products on sub-blocks of a larger matrix.
void gemm_ld(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
             const float* B, int ldb, float beta, float* C, int ldc);

// The same products with their operands rounded to `operands` first (gemm/dtype.hpp, autograd/autocast.hpp):
// DType::bf16 rounds op(A) and op(B) to bfloat16 (to nearest, ties to even) and sums the
// products in fp32, one oneDNN bf16 matmul, except the shapes where that is not faster, which
// run in fp32 (bf16_product_in_fp32). DType::fp32 is gemm / gemm_ld. C stays fp32. Where bf16
// does not run or is slower than fp32 and not allowed (autocast::bf16_speed, allow_slower_bf16)
// bf16 throws Error, with the reason autocast::bf16_unsupported_reason() gives.
void gemm(DType operands, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
          const float* B, float beta, float* C);
void gemm_ld(DType operands, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
             const float* B, int ldb, float beta, float* C, int ldc);

// The same with B also given already converted: b_bf16 is B's values as bf16 bits, packed in B's
// stored orientation ((K, N), or (N, K) when trans_b; row length = the stored columns), as
// convert_to_bf16 writes them. autocast keeps such a copy of each weight per version
// (autograd/bf16_weights.hpp), so forward and backward convert a weight once, not per product.
// B (fp32) is still read when the product runs in fp32 (bf16_product_in_fp32). Null b_bf16:
// converted here, as above.
void gemm_ld(DType operands, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
             const float* B, int ldb, const std::uint16_t* b_bf16, float beta, float* C, int ldc);
void gemm(DType operands, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
          const float* B, const std::uint16_t* b_bf16, float beta, float* C);
// And with A given converted too (a_bf16: A's stored (M, K), or (K, M) when trans_a, packed):
// a Linear's backward converts dy once for both dx = dy·W and dW = dyᵀ·x.
void gemm(DType operands, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
          const std::uint16_t* a_bf16, const float* B, const std::uint16_t* b_bf16, float beta, float* C);

// A layer's y (M, N) = op(A) · op(B) + bias (N, added to every row; null: none), y fresh (beta =
// 0), A and B given converted or not as above. Where the backend's bf16 product runs, the bias is
// added in its epilogue to the finished sum (no pass over y); elsewhere (fp32, the shapes that
// stay in fp32) by add_bias_rows after the product. The same bits either way (a NaN's payload
// aside): each element is the product's sum plus its bias, rounded once (tests/gemm_bias_test.cpp).
// A and B (fp32) are required, as above; C must not overlap A, B or the bias (a bias inside C is
// an Error, as are null pointers and the sizes gemm_ld refuses, all named "gemm_bias").
void gemm_bias(DType operands, bool trans_a, bool trans_b, int M, int N, int K, const float* A,
               const std::uint16_t* a_bf16, const float* B, const std::uint16_t* b_bf16, const float* bias, float* C);

// Inference's packed weights (autograd/packed_weights.hpp): the backend's copy of a weight block
// w16 (N, K), bf16, in the layout its bf16 product x·w16ᵀ on M rows reads fastest; null where the
// backend has none (pack_bf16_b, gemm/gemm_backend.hpp) or bf16 products are refused here.
std::shared_ptr<const void> pack_bf16_weight(int M, int N, int K, const std::uint16_t* w16);

// C (M, N) = x16 (M, K) · w16ᵀ + bias (N floats, or null), as gemm_bias(DType::bf16, false, true,
// ...) with both operands given in bf16, but on `packed`, pack_bf16_weight's copy of w16: rows
// over the pool, and a share the backend cannot run on the packed layout runs on w16. The sums
// are the backend's on that layout: not always the bits of the product on w16 (K = 2048 sums in
// another order), the same for any thread count. An Error, writing nothing, for a null pointer or
// a size under 1, where the backend has no packed products, and where gemm_bias(DType::bf16)
// refuses (bf16 slower than fp32 here).
void gemm_bias_packed_weight(int M, int N, int K, const std::uint16_t* x16, const std::uint16_t* w16,
                             const void* packed, const float* bias, float* C);

// Whether inference's bf16 products run on packed weights: XTGRAD_INFERENCE_WEIGHTS_PACKED is on
// (by CPU where unset) and the backend packs.
bool inference_weights_packed();

// C (M, N; row stride ldc) += bias (N) in every row, rows over the pool. bias null: nothing. A
// negative size or ldc < N is an Error naming them, before C is written.
void add_bias_rows(float* C, int M, int N, int ldc, const float* bias);

// src (rows, cols) with row stride ld -> dst (rows, cols) packed, each value rounded to bf16 (to
// nearest, ties to even; gemm/dtype.hpp). Split over the pool by rows when big.
void convert_to_bf16(const float* src, int rows, int cols, int ld, std::uint16_t* dst);

// True when gemm_ld(DType::bf16, ...) runs a product of this shape in fp32, unrounded, because
// bf16 would not be faster:
//  - small products (small_gemm_fits: attention's blocks on short sentences): small_gemm is an
//    fp32 kernel, so bf16 operands would only add the rounding, which cost as much as the
//    product itself (perf on seed-d under autocast: 2.7 % of the step rounding them);
//  - a side shorter than bf16_min_side() (a Linear layer on a 7-token sentence, its weight
//    gradient summed over 7 rows): memory-bound, where converting the weight costs more than the
//    bf16 arithmetic saves (bench/bf16_skinny_bench measures the crossover).
// Ops ask first, so that they do not fetch a weight's bf16 copy for nothing.
bool bf16_product_in_fp32(int M, int N, int K);

// True when y = x·Wᵀ, (M, N, K) with W stored (N, K), runs faster as x·(Wᵀ) on a copy of W stored
// transposed (K, N): the product goes to the backend (no side of at most kSkinnyRows, not
// small_gemm's), the backend runs A·Bᵀ below its A·B (oneDNN), and
// XTGRAD_INFERENCE_WEIGHTS_TRANSPOSED is on (by CPU where unset). For ops whose W stays the same
// over many products, which pay the transpose once (autograd/transposed_weights.hpp).
bool nt_faster_as_nn(int M, int N, int K);

namespace detail {
// The shortest side a bf16 product needs to run in bf16 (bf16_product_in_fp32); settable for
// bench/bf16_skinny_bench, which measures both sides of the crossover.
int bf16_min_side();
void set_bf16_min_side(int rows);

// Whether a product A·B with a narrow C runs as A·(Bᵀ)ᵀ, B transposed first (gemm/blas.cpp), on a
// backend slow on a narrow C: XTGRAD_NARROW_NN_TRANSPOSED (by CPU where unset) unless set
// (set_speed_switch; the tests set it both ways to reach both paths).
bool narrow_nn_transposed();
// nt_faster_as_nn's switch, XTGRAD_INFERENCE_WEIGHTS_TRANSPOSED, the same way.
bool inference_weights_transposed();
// XTGRAD_SKINNY_STREAMED_GRADIENT (by CPU where unset), the same way.
bool skinny_streamed_gradient();
// Whether gemm_ld (fp32) would compute an (M, N, K) product on a skinny_tn kernel
// (gemm/skinny_gemm.hpp, skinny_tn_kernel_takes), by its routing and switches as they stand:
// where a weight gradient handed over as its factors gets the stored product's bits
// (autograd/gradient_consumer.hpp).
bool product_on_skinny_tn_kernel(int M, int N, int K);
// Whether gemm_ld sends any skinny product to the skinny kernels in this process: the backend
// prefers them (OpenBLAS), they run on AVX-512, or on the Zen 3's AVX2 (blas.cpp); elsewhere on
// oneDNN without AVX-512 (XTGRAD_ISA=baseline) none, so XTGRAD_SKINNY_GEMM changes nothing there.
bool skinny_kernels_route();

// Whether gemm_ld(DType::bf16) runs the medium blocks small_gemm takes in small_gemm_bf16:
// XTGRAD_SMALL_GEMM and XTGRAD_SMALL_GEMM_BF16 are on (unless set; the latter's default: the
// kernel runs here and the CPU's bf16 dot products pay, autocast::bf16_dot_products_pay) and
// the kernel runs here (small_gemm_bf16_available); else they run in fp32 small_gemm.
bool medium_blocks_in_bf16();
}  // namespace detail

// The backend alone, without gemm_ld's routing of skinny products to gemm/skinny_gemm.hpp:
// the reference the tests and bench/skinny_bench compare those kernels with.
void gemm_backend(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                  const float* B, int ldb, float beta, float* C, int ldc);

// "onednn" or "openblas": the backend this process uses. XTGRAD_GEMM_BACKEND=onednn|openblas
// chooses it (unset or empty: oneDNN, or OpenBLAS in a build without it), read on the first call
// here or of any product and kept for the process; an invalid value, or a backend that cannot be
// loaded, is an Error naming the variable there (and the next call reads it again).
const char* gemm_backend_name();

// The kernel family the backend chose for this CPU: OpenBLAS's core name ("Cooperlake"; the
// one OPENBLAS_CORETYPE names when that is set), oneDNN's instruction set ("avx512_core_bf16").
const char* gemm_backend_kernel();

// Threads one product may use: 1 until set, at least 1. OpenBLAS: its own pthreads (at most the
// count it was built for, 64 in Debian's). oneDNN: xtgrad's pool (threads/parallel.hpp) splits a
// big product into blocks, so min(this, num_threads()) count.
void set_blas_threads(int n);
int blas_threads();

// The product thread count set to n for a scope, then restored: batched products that xtgrad
// splits over its own threads (threads/parallel.hpp) run each small GEMM single-threaded.
// The count is process-wide: do not run xtgrad ops from two application threads at once.
class BlasThreadsScope {
public:
    explicit BlasThreadsScope(int n);
    ~BlasThreadsScope();
    BlasThreadsScope(const BlasThreadsScope&) = delete;
    BlasThreadsScope& operator=(const BlasThreadsScope&) = delete;

private:
    int previous_;
};

// Inside this scope (per thread) the products' results are about to be read: a big fresh C
// (beta = 0, >= 1 MiB, which skinny_tn otherwise writes with streamed stores, past the caches,
// for a reader that comes much later: Adam's step after backward) is written with plain stores,
// into cache. The optimizer's step in backward reads a weight gradient just written
// (autograd/gradient_consumer.hpp). The values are the same either way (a NaN's sign aside).
class ResultReadAtOnce {
public:
    ResultReadAtOnce();
    ~ResultReadAtOnce();
    ResultReadAtOnce(const ResultReadAtOnce&) = delete;
    ResultReadAtOnce& operator=(const ResultReadAtOnce&) = delete;
};
namespace detail {
bool result_read_at_once();  // inside a ResultReadAtOnce scope on this thread
}  // namespace detail

// Runs product(c) for every slice c of a batched product (matmul's slices, attention's (batch,
// head) blocks). Big batches of small products (attention: B·h products of L×d by d×L) are split
// over xtgrad's threads, each slice one single-threaded GEMM: OpenBLAS threading each small
// product is 1.5-2x slower, and this is ~2x torch's bmm (measured on 2 cores when this was
// chosen; docs/performance.md, "Design choices"). Tiny batches (Winter Games: 8 products of
// 7×64 by 64×7) stay serial: waking a worker costs more. `independent` is false when slices
// write the same output (a broadcast operand's gradient): those must run in order. Each slice's
// result is the same either way.
void for_each_slice(std::size_t count, double flops_per_slice, bool independent,
                    const std::function<void(std::size_t)>& product);

}  // namespace xtgrad
