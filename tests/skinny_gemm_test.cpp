// The skinny kernels (autograd/skinny_gemm.hpp) against a double-precision reference (xtensor-blas), through
// gemm_ld's routing: every layout with the skinny side on M, N or K, tails of the SIMD width,
// leading dimensions wider than the matrix, alpha/beta, and 1 or 2 threads.
#include "tests/reference_gemm.hpp"
#include "tests/test_util.hpp"

#include "autograd/blas.hpp"
#include "autograd/skinny_gemm.hpp"

#include <cmath>
#include <limits>
#include <vector>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;

namespace {

struct Product {
    bool ta, tb;
    int M, N, K;
};

using test::random_buffer;

// Max |gemm_ld - reference| / (1 + |reference|) for one product with padded leading dimensions.
double worst_error(const Product& p, float alpha, float beta, bool c_uninitialised) {
    const int a_rows = p.ta ? p.K : p.M, a_cols = p.ta ? p.M : p.K;
    const int b_rows = p.tb ? p.N : p.K, b_cols = p.tb ? p.K : p.N;
    const int lda = a_cols + 3, ldb = b_cols + 5, ldc = p.N + 2;
    const std::vector<float> A = random_buffer(static_cast<std::size_t>(a_rows) * lda + 1, 1);
    const std::vector<float> B = random_buffer(static_cast<std::size_t>(b_rows) * ldb + 1, 2);
    std::vector<float> C = random_buffer(static_cast<std::size_t>(p.M) * ldc + 1, 3);
    const std::vector<float> C0 = C;
    if (c_uninitialised) std::fill(C.begin(), C.end(), std::numeric_limits<float>::quiet_NaN());
    gemm_ld(p.ta, p.tb, p.M, p.N, p.K, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
    const std::vector<double> product = test::reference_gemm(p.ta, p.tb, p.M, p.N, p.K, A.data(), lda, B.data(), ldb);
    double worst = 0;
    for (int m = 0; m < p.M; ++m)
        for (int n = 0; n < p.N; ++n) {
            const double ref = alpha * product[static_cast<std::size_t>(m) * p.N + n] +
                               (beta == 0.f ? 0.0 : beta * static_cast<double>(C0[m * ldc + n]));
            const double got = C[m * ldc + n];
            worst = std::isfinite(got) ? std::max(worst, std::abs(got - ref) / (1 + std::abs(ref))) : 1e30;
        }
    // The padding between rows is never written.
    for (int m = 0; m < p.M; ++m)
        for (int n = p.N; n < ldc && m * ldc + n < static_cast<int>(C.size()); ++n)
            if (!c_uninitialised && C[m * ldc + n] != C0[m * ldc + n]) worst = 1e30;
    return worst;
}

}  // namespace

TEST_CASE("skinny products equal a double-precision reference") {
    // Every layout (both transpose flags), with the skinny side on M, N or K in turn: M is a
    // Linear layer's rows, N a Conv1d's positions, K a weight gradient's inner dimension.
    std::vector<Product> products;
    for (bool ta : {false, true})
        for (bool tb : {false, true})
            for (int small : {1, 2, 3, 5, 7, 8, 13, 16})
                for (int big : {9, 17, 70}) {
                    products.push_back({ta, tb, small, big, big + 3});
                    products.push_back({ta, tb, big + 3, small, big});
                    products.push_back({ta, tb, big, big + 1, small});
                }
    for (int n : {1, 8, 300})  // long rows: SIMD tails and the split over threads
        for (int k : {1, 15, 70}) {
            products.push_back({false, true, 7, n, k});   // y = x · Wᵀ
            products.push_back({false, false, 7, n, k});  // dx = dy · W
            products.push_back({true, false, n, k, 7});   // dW = dyᵀ · x
        }
    products.push_back({true, false, 600, 512, 7});  // a big fresh dW: streamed stores, rows not all aligned
    for (int threads : {1, 2}) {
        set_num_threads(threads);
        for (const Product& p : products) {
            CAPTURE(p.ta);
            CAPTURE(p.tb);
            CAPTURE(p.M);
            CAPTURE(p.N);
            CAPTURE(p.K);
            CAPTURE(threads);
            CHECK(worst_error(p, 1.f, 0.f, true) < 1e-5);   // a fresh gradient: C not read
            CHECK(worst_error(p, 0.5f, 1.f, false) < 1e-5);  // accumulate into C
            CHECK(worst_error(p, -2.f, 0.25f, false) < 1e-5);
        }
    }
    set_num_threads(1);
}

TEST_CASE("skinny products split over two threads give the one-thread result exactly") {
    // Big enough to be split: a Linear layer of tutorial C's feed-forward on a 7-token sentence.
    const Product p{false, true, 7, 2048, 512};
    const std::vector<float> A = random_buffer(7 * 512, 4), B = random_buffer(2048 * 512, 5);
    std::vector<float> one(7 * 2048), two(7 * 2048);
    set_num_threads(1);
    gemm_ld(p.ta, p.tb, p.M, p.N, p.K, 1.f, A.data(), 512, B.data(), 512, 0.f, one.data(), 2048);
    set_num_threads(2);
    gemm_ld(p.ta, p.tb, p.M, p.N, p.K, 1.f, A.data(), 512, B.data(), 512, 0.f, two.data(), 2048);
    set_num_threads(1);
    CHECK(one == two);
}

TEST_CASE("the skinny kernels agree with the GEMM backend on a Linear layer's three products") {
    // x (7, 512), W (1024, 512), dy (7, 1024): forward, dx and dW (2 MiB: streamed) as gemm_ld routes them.
    // Both sum in float, in different orders: relative differences of ~1e-5 are rounding.
    const std::vector<float> x = random_buffer(7 * 512, 6), w = random_buffer(1024 * 512, 7), dy = random_buffer(7 * 1024, 8);
    const auto compare = [](bool ta, bool tb, int M, int N, int K, const float* A, int lda, const float* B, int ldb) {
        std::vector<float> ours(static_cast<std::size_t>(M) * N), blas(ours.size());
        gemm_ld(ta, tb, M, N, K, 1.f, A, lda, B, ldb, 0.f, ours.data(), N);
        gemm_backend(ta, tb, M, N, K, 1.f, A, lda, B, ldb, 0.f, blas.data(), N);
        double worst = 0;
        for (std::size_t i = 0; i < ours.size(); ++i)
            worst = std::max(worst, std::abs(static_cast<double>(ours[i]) - blas[i]) / (1 + std::abs(blas[i])));
        return worst;
    };
    CHECK(compare(false, true, 7, 1024, 512, x.data(), 512, w.data(), 512) < 1e-4);    // y = x · Wᵀ
    CHECK(compare(false, false, 7, 512, 1024, dy.data(), 1024, w.data(), 512) < 1e-4);  // dx = dy · W
    CHECK(compare(true, false, 1024, 512, 7, dy.data(), 1024, x.data(), 512) < 1e-4);   // dW = dyᵀ · x
}

TEST_SUITE_END();
