// The one door to OpenBLAS. Row-major C (M, N) = alpha * op(A) (M, K) · op(B) (K, N) + beta * C,
// op = transpose when the flag is set. beta = 1 accumulates (gradients add into .grad in place).
// Kept in its own translation unit: <cblas.h> and xtensor-blas cannot share one.
#pragma once

namespace xtgrad {

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
          const float* B, float beta, float* C);

// Same with explicit leading dimensions, for products on sub-blocks of a larger matrix.
void gemm_ld(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
             const float* B, int ldb, float beta, float* C, int ldc);

// OpenBLAS itself, without gemm_ld's routing of skinny products to autograd/skinny_gemm.hpp:
// the reference the tests and the benchmark compare those kernels with.
void gemm_openblas(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                   const float* B, int ldb, float beta, float* C, int ldc);

void set_blas_threads(int n);
int blas_threads();

// OpenBLAS's thread count set to n for a scope, then restored: batched products that xtgrad
// splits over its own threads (autograd/parallel.hpp) run each small GEMM single-threaded.
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

}  // namespace xtgrad
