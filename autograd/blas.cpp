#include "autograd/blas.hpp"

#include "autograd/parallel.hpp"

#include <cblas.h>

#include <cstddef>

namespace xtgrad {

namespace {
void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
           int ldb, float beta, float* C, int ldc) {
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
}  // namespace

void gemm_ld(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
             const float* B, int ldb, float beta, float* C, int ldc) {
    if (M == 0 || N == 0) return;
    // A tiny inner dimension (K <= 16: the weight gradients of a 7-token batch, dW = dYᵀ·X with
    // K = 7) makes the product a pure write of C. OpenBLAS's own threading of it ran at half
    // the speed of one thread (12 products of 2048×512 by K = 7: 13-31 ms on 2 threads, 5.6-6.4
    // on 1). So it runs on 1 OpenBLAS thread, with C's rows split over xtgrad's threads if
    // there are several (set_num_threads).
    if (K <= 16 && static_cast<long>(M) * N >= (1L << 16) && openblas_get_num_threads() > 1) {
        BlasThreadsScope single(1);
        parallel_for(static_cast<std::size_t>(M), 64, [&](std::size_t m0, std::size_t m1) {
            const std::size_t a_offset = trans_a ? m0 : m0 * static_cast<std::size_t>(lda);  // row m0 of op(A)
            sgemm(trans_a, trans_b, static_cast<int>(m1 - m0), N, K, alpha, A + a_offset, lda, B, ldb, beta,
                  C + m0 * static_cast<std::size_t>(ldc), ldc);
        });
        return;
    }
    sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
          const float* B, float beta, float* C) {
    gemm_ld(trans_a, trans_b, M, N, K, alpha, A, trans_a ? M : K, B, trans_b ? K : N, beta, C, N);
}

void set_blas_threads(int n) { openblas_set_num_threads(n); }
int blas_threads() { return openblas_get_num_threads(); }

BlasThreadsScope::BlasThreadsScope(int n) : previous_(openblas_get_num_threads()) {
    if (n != previous_) openblas_set_num_threads(n);
}
BlasThreadsScope::~BlasThreadsScope() {
    if (openblas_get_num_threads() != previous_) openblas_set_num_threads(previous_);
}

}  // namespace xtgrad
