#include "tests/reference_gemm.hpp"

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xadapt.hpp>
#include <xtensor/xarray.hpp>
#include <xtensor/xmanipulation.hpp>

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

}  // namespace xtgrad::test
