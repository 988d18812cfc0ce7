#include "autograd/blas.hpp"

#include "autograd/skinny_gemm.hpp"

#include <cblas.h>


namespace xtgrad {

namespace {
void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
           int ldb, float beta, float* C, int ldc) {
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
}  // namespace

void gemm_openblas(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                   const float* B, int ldb, float beta, float* C, int ldc) {
    if (M == 0 || N == 0) return;
    sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm_ld(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
             const float* B, int ldb, float beta, float* C, int ldc) {
    if (M == 0 || N == 0) return;
    // A product with a skinny side (a Linear or Conv1d layer on a 7-token sentence, its weight
    // gradient over 7 rows) streams the big operand once instead of packing it (skinny_gemm.hpp).
    if (skinny_gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) return;
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
