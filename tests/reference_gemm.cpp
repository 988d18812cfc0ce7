#include "tests/reference_gemm.hpp"

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xadapt.hpp>
#include <xtensor/xarray.hpp>
#include <xtensor/xmanipulation.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace xtgrad::test {

namespace {
// A (rows, cols) float matrix with leading dimension ld, as a dense double array, transposed if asked.
xt::xarray<double> as_double(const float* p, int rows, int cols, int ld, bool transpose) {
    xt::xarray<double> out = xt::empty<double>({static_cast<std::size_t>(rows), static_cast<std::size_t>(cols)});
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) out(r, c) = p[static_cast<std::size_t>(r) * ld + c];
    if (!transpose) return out;
    xt::xarray<double> t = xt::transpose(out);
    return t;
}
}  // namespace

std::vector<double> reference_gemm(bool ta, bool tb, int M, int N, int K, const float* A, int lda,
                                   const float* B, int ldb) {
    const xt::xarray<double> a = as_double(A, ta ? K : M, ta ? M : K, lda, ta);  // (M, K)
    const xt::xarray<double> b = as_double(B, tb ? N : K, tb ? K : N, ldb, tb);  // (K, N)
    const xt::xarray<double> c = xt::linalg::dot(a, b);                         // (M, N)
    return {c.begin(), c.end()};
}

double gemm_error(GemmDoor door, const GemmCase& p, float alpha, float beta) {
    const int a_rows = p.ta ? p.K : p.M, a_cols = p.ta ? p.M : p.K;
    const int b_rows = p.tb ? p.N : p.K, b_cols = p.tb ? p.K : p.N;
    const int lda = std::max(a_cols, 1) + 3, ldb = std::max(b_cols, 1) + 1, ldc = p.N + 2;
    const std::vector<float> A = random_buffer(static_cast<std::size_t>(a_rows) * lda + 1, 11);
    const std::vector<float> B = random_buffer(static_cast<std::size_t>(b_rows) * ldb + 1, 12);
    std::vector<float> C = random_buffer(static_cast<std::size_t>(p.M) * ldc + 1, 13);
    const std::vector<float> C0 = C;
    if (beta == 0.f)
        for (int m = 0; m < p.M; ++m)
            for (int n = 0; n < p.N; ++n) C[static_cast<std::size_t>(m) * ldc + n] = std::numeric_limits<float>::quiet_NaN();
    door(p.ta, p.tb, p.M, p.N, p.K, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
    const std::vector<double> product = p.K == 0 ? std::vector<double>(static_cast<std::size_t>(p.M) * p.N, 0.0)
                                                 : reference_gemm(p.ta, p.tb, p.M, p.N, p.K, A.data(), lda, B.data(), ldb);
    double worst = 0;
    for (int m = 0; m < p.M; ++m) {
        for (int n = 0; n < ldc; ++n) {
            const std::size_t i = static_cast<std::size_t>(m) * ldc + n;
            if (n >= p.N) {  // padding between rows: never written
                if (C[i] != C0[i]) worst = 1e30;
                continue;
            }
            const double ref = alpha * product[static_cast<std::size_t>(m) * p.N + n] +
                               (beta == 0.f ? 0.0 : beta * static_cast<double>(C0[i]));
            worst = std::isfinite(C[i]) ? std::max(worst, std::abs(C[i] - ref) / (1 + std::abs(ref))) : 1e30;
        }
    }
    return worst;
}

}  // namespace xtgrad::test
