// small_gemm (gemm/small_gemm.hpp) against a double-precision reference (xtensor-blas): every
// layout, rows around the tile height (6), columns around the tile width (16) and its multiples
// (the in-place path for B), the attention core's shapes, alpha/beta, padded leading dimensions;
// and gemm_ld sends exactly the products small_gemm_fits accepts to it.
#include "tests/reference_gemm.hpp"
#include "tests/test_util.hpp"

#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/gemm/small_gemm.hpp>

#include <vector>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;

TEST_CASE("small products equal a double-precision reference in every layout") {
    std::vector<test::GemmCase> products;
    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            for (int M : {1, 5, 6, 7, 13})
                for (int N : {1, 3, 15, 16, 17, 32, 40})
                    for (int K : {1, 8, 9, 64}) products.push_back({ta, tb, M, N, K});
            // the attention core's per-(batch, head) products on tutorial D's 10- and 20-token sentences
            products.push_back({ta, tb, 10, 10, 64});
            products.push_back({ta, tb, 20, 20, 64});
            products.push_back({ta, tb, 20, 64, 10});
            products.push_back({ta, tb, 20, 64, 20});
        }
    for (const test::GemmCase& p : products) {
        INFO(test::describe(p));
        CHECK(test::gemm_error(&small_gemm, p, 1.f, 0.f) < 1e-5);     // a fresh result: C not read
        CHECK(test::gemm_error(&small_gemm, p, 0.5f, 1.f) < 1e-5);    // accumulate into C
        CHECK(test::gemm_error(&small_gemm, p, -2.f, 0.25f) < 1e-5);  // general alpha and beta
    }
}

TEST_CASE("gemm_ld hands the attention core's small products to small_gemm") {
    // small_gemm sums each element over k in order, one FMA at a time: gemm_ld's result equals it
    // bit for bit when it took the product (necessary, not sufficient: a backend summing in the
    // same order would too, as oneDNN does for 100 x 100 x 64).
    const auto same_as_small = [](int M, int N, int K) {
        const std::vector<float> A = test::random_buffer(static_cast<std::size_t>(M) * K, 1),
                                 B = test::random_buffer(static_cast<std::size_t>(N) * K, 2);
        std::vector<float> routed(static_cast<std::size_t>(M) * N), direct(routed.size());
        gemm(false, true, M, N, K, 1.f, A.data(), B.data(), 0.f, routed.data());
        small_gemm(false, true, M, N, K, 1.f, A.data(), K, B.data(), K, 0.f, direct.data(), N);
        return routed == direct;
    };
    CHECK(small_gemm_fits(20, 20, 64));
    CHECK(same_as_small(20, 20, 64));
    CHECK(same_as_small(10, 10, 64));
    CHECK(small_gemm_fits(32, 32, 32));
    CHECK_FALSE(small_gemm_fits(100, 100, 64));  // tutorial B's 100-token slices: the backend's
    CHECK_FALSE(small_gemm_fits(33, 32, 32));
}

TEST_SUITE_END();
