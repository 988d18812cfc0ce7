// The one door to the GEMM backend (oneDNN or OpenBLAS, the meson option `gemm`;
// autograd/gemm_backend.hpp). Row-major C (M, N) = alpha * op(A) (M, K) · op(B) (K, N) + beta * C,
// op = transpose when the flag is set. beta = 1 accumulates (gradients add into .grad in place);
// beta = 0 never reads C (it may be uninitialised). K = 0 gives C = beta * C.
#pragma once

namespace xtgrad {

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
          const float* B, float beta, float* C);

// Same with explicit leading dimensions, for products on sub-blocks of a larger matrix.
void gemm_ld(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
             const float* B, int ldb, float beta, float* C, int ldc);

// The backend alone, without gemm_ld's routing of skinny products to autograd/skinny_gemm.hpp:
// the reference the tests and bench/skinny_bench compare those kernels with.
void gemm_backend(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                  const float* B, int ldb, float beta, float* C, int ldc);

// "onednn" or "openblas": the backend this build links.
const char* gemm_backend_name();

// Threads one product may use. OpenBLAS: its own pthreads. oneDNN: xtgrad's pool
// (autograd/parallel.hpp) splits a big product into blocks, so min(this, num_threads()) count.
void set_blas_threads(int n);
int blas_threads();

// The product thread count set to n for a scope, then restored: batched products that xtgrad
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
