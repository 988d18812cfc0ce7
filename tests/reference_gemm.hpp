// The double-precision reference product the GEMM tests compare against, computed by
// xtensor-blas (xt::linalg::dot on double arrays: an independent code path from xtgrad's
// float kernels). In its own translation unit: <cblas.h> and xtensor-blas cannot share one.
#pragma once

#include "autograd/ops.hpp"
#include "autograd/random.hpp"

#include <cstdint>
#include <vector>

namespace xtgrad::test {

// op(A) · op(B) in double, row-major (M, N); op transposes when ta / tb.
// A: (M, K) or (K, M) with leading dimension lda; B: (K, N) or (N, K) with ldb.
std::vector<double> reference_gemm(bool ta, bool tb, int M, int N, int K, const float* A, int lda,
                                   const float* B, int ldb);

// n standard-normal floats from Generator(seed): the operands (and a C to overwrite) of a test product.
inline std::vector<float> random_buffer(std::size_t n, std::uint64_t seed) {
    Generator g(seed);
    const Array a = randn({n}, g).data();
    return {a.begin(), a.end()};
}

}  // namespace xtgrad::test
