// The double-precision reference product the GEMM tests compare against, computed by
// xtensor-blas (xt::linalg::dot on double arrays: an independent code path from xtgrad's
// float kernels). In its own translation unit: <cblas.h> and xtensor-blas cannot share one.
#pragma once

#include <vector>

namespace xtgrad::test {

// op(A) · op(B) in double, row-major (M, N); op transposes when ta / tb.
// A: (M, K) or (K, M) with leading dimension lda; B: (K, N) or (N, K) with ldb.
std::vector<double> reference_gemm(bool ta, bool tb, int M, int N, int K, const float* A, int lda,
                                   const float* B, int ldb);

}  // namespace xtgrad::test
