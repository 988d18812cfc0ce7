// The double-precision reference product the GEMM tests compare against, computed by
// xtensor-blas (xt::linalg::dot on double arrays: an independent code path from xtgrad's
// float kernels). In its own translation unit: <cblas.h> and xtensor-blas cannot share one.
#pragma once

#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/random/random.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace xtgrad::test {

// A product's shape and layout: C (M, N) = op(A) (M, K) · op(B) (K, N), op transposing when ta / tb.
struct GemmCase {
    bool ta, tb;
    int M, N, K;
};

// "ta 0 tb 1 M 7 N 512 K 2048", for a failing check's message (doctest's INFO).
inline std::string describe(const GemmCase& p) {
    return "ta " + std::to_string(p.ta) + " tb " + std::to_string(p.tb) + " M " + std::to_string(p.M) + " N " +
           std::to_string(p.N) + " K " + std::to_string(p.K);
}

// op(A) · op(B) in double, row-major (M, N); op transposes when ta / tb.
// A: (M, K) or (K, M) with leading dimension lda; B: (K, N) or (N, K) with ldb.
std::vector<double> reference_gemm(bool ta, bool tb, int M, int N, int K, const float* A, int lda,
                                   const float* B, int ldb);

// A product with gemm_ld's signature: gemm_ld itself, gemm_backend, or one of xtgrad's own kernels.
using GemmDoor = void (*)(bool, bool, int, int, int, float, const float*, int, const float*, int, float, float*, int);

// Max |door(...) - reference| / (1 + |reference|) for one product of random operands with leading
// dimensions wider than the matrices; 1e30 when the door wrote C's padding between rows or left
// a non-finite value. With beta = 0, C starts as NaN (it must not be read).
double gemm_error(GemmDoor door, const GemmCase& p, float alpha, float beta);

// Float sums of K products of N(0, 1) numbers drift from the double result by ~sqrt(K) ulps of
// the terms (the backends block and reorder K freely): the bound gemm_error's checks allow.
inline double gemm_tolerance(int K, float alpha) {
    return 4e-6 * std::sqrt(K + 1.0) * std::max(1.f, std::abs(alpha));
}

// n standard-normal floats from Generator(seed): the operands (and a C to overwrite) of a test product.
inline std::vector<float> random_buffer(std::size_t n, std::uint64_t seed) {
    Generator g(seed);
    const Array a = randn({n}, g).data();
    return {a.begin(), a.end()};
}

}  // namespace xtgrad::test
