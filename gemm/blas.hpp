// The one door to the GEMM backend (oneDNN or OpenBLAS, the meson option `gemm`;
// gemm/gemm_backend.hpp). Row-major C (M, N) = alpha * op(A) (M, K) · op(B) (K, N) + beta * C,
// op = transpose when the flag is set. beta = 1 accumulates (gradients add into .grad in place);
// beta = 0 never reads C (it may be uninitialised). K = 0 gives C = beta * C.
#pragma once

#include <xtgrad/gemm/dtype.hpp>

#include <cstddef>
#include <functional>

namespace xtgrad {

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
          const float* B, float beta, float* C);

// Same with explicit leading dimensions, for products on sub-blocks of a larger matrix.
void gemm_ld(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
             const float* B, int ldb, float beta, float* C, int ldc);

// The same products with their operands rounded to `operands` first (gemm/dtype.hpp, autograd/autocast.hpp):
// DType::bf16 rounds op(A) and op(B) to bfloat16 (to nearest, ties to even) and sums the
// products in fp32, one oneDNN bf16 matmul (or, for products small_gemm takes, small_gemm on the
// rounded values: the same arithmetic, since a product of two bf16 values is exact in fp32).
// DType::fp32 is gemm / gemm_ld. C stays fp32. The OpenBLAS build throws Error for bf16.
void gemm(DType operands, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
          const float* B, float beta, float* C);
void gemm_ld(DType operands, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
             const float* B, int ldb, float beta, float* C, int ldc);

// The backend alone, without gemm_ld's routing of skinny products to gemm/skinny_gemm.hpp:
// the reference the tests and bench/skinny_bench compare those kernels with.
void gemm_backend(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                  const float* B, int ldb, float beta, float* C, int ldc);

// "onednn" or "openblas": the backend this build links.
const char* gemm_backend_name();

// The kernel family the backend chose for this CPU: OpenBLAS's core name ("Cooperlake"; the
// one OPENBLAS_CORETYPE names when that is set), oneDNN's instruction set ("avx512_core_bf16").
const char* gemm_backend_kernel();

// Threads one product may use. OpenBLAS: its own pthreads. oneDNN: xtgrad's pool
// (threads/parallel.hpp) splits a big product into blocks, so min(this, num_threads()) count.
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
