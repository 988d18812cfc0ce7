// small_gemm (gemm/small_gemm.hpp) against a double-precision reference (xtensor-blas): every
// layout, rows around the tile height (6), columns around the batch widths (8, 16) and their
// multiples (the in-place path for B), the attention core's shapes, alpha/beta, padded leading
// dimensions, on AVX2 and AVX-512; and gemm_ld sends exactly the products small_gemm_takes accepts to it.
#include "tests/reference_gemm.hpp"
#include "tests/test_util.hpp"

#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/gemm/small_gemm.hpp>
#include <xtgrad/simd/cpu_isa.hpp>

#include <algorithm>
#include <vector>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;

TEST_CASE("small products equal a double-precision reference in every layout") {
    std::vector<test::GemmCase> products;
    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            for (int M : {1, 5, 6, 7, 13})
                for (int N : {1, 3, 15, 16, 17, 32, 40})
                    for (int K : {1, 8, 9, 16, 33, 64}) products.push_back({ta, tb, M, N, K});
            // the attention core's per-(batch, head) products on tutorial D's 10- and 20-token sentences
            products.push_back({ta, tb, 10, 10, 64});
            products.push_back({ta, tb, 20, 20, 64});
            products.push_back({ta, tb, 20, 64, 10});
            products.push_back({ta, tb, 20, 64, 20});
            // tutorial B's 99- and 100-token slices (small_gemm_takes on AVX-512): tiles of 1-4
            // batches, B transposed in 16 x 16 blocks with row and column tails
            products.push_back({ta, tb, 100, 100, 64});
            products.push_back({ta, tb, 99, 99, 64});
            products.push_back({ta, tb, 100, 64, 100});
            products.push_back({ta, tb, 99, 64, 99});
            products.push_back({ta, tb, 37, 70, 50});
        }
    std::vector<Isa> isas{Isa::baseline};  // small_gemm has an AVX-512 build: both are checked
    if (avx512_available()) isas.push_back(Isa::avx512);
    for (Isa isa : isas) {
        const IsaScope scope(isa);
        for (const test::GemmCase& p : products) {
            INFO(test::describe(p));
            CAPTURE(static_cast<int>(isa));
            // float's rounding grows with the K terms each element sums (one FMA at a time)
            const double tolerance = 1e-5 * std::max(1.0, p.K / 64.0);
            CHECK(test::gemm_error(&small_gemm, p, 1.f, 0.f) < tolerance);     // a fresh result: C not read
            CHECK(test::gemm_error(&small_gemm, p, 0.5f, 1.f) < tolerance);    // accumulate into C
            CHECK(test::gemm_error(&small_gemm, p, -2.f, 0.25f) < tolerance);  // general alpha and beta
        }
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
    CHECK_FALSE(small_gemm_fits(100, 100, 64));  // tutorial B's 100-token slices: past the small limit
    CHECK_FALSE(small_gemm_fits(33, 32, 32));
}

TEST_CASE("on AVX-512 small_gemm also takes tutorial B's attention slices, never a skinny or a big product") {
    {
        const IsaScope baseline(Isa::baseline);
        CHECK(small_gemm_takes(20, 20, 64));
        CHECK_FALSE(small_gemm_takes(100, 100, 64));  // the backend's on AVX2
    }
    if (!avx512_available()) return;
    const IsaScope scope(Isa::avx512);
    CHECK(small_gemm_takes(100, 100, 64));   // q kᵀ
    CHECK(small_gemm_takes(100, 64, 100));   // w v, ds k, dsᵀ q
    CHECK(small_gemm_takes(128, 128, 128));  // the medium limit itself
    CHECK_FALSE(small_gemm_takes(129, 128, 128));
    CHECK_FALSE(small_gemm_takes(7, 512, 512));    // a Linear on a 7-token sentence: the skinny kernels'
    CHECK_FALSE(small_gemm_takes(512, 7, 512));
    CHECK_FALSE(small_gemm_takes(16, 16, 512));    // K past the panel's limit
    CHECK_FALSE(small_gemm_takes(1600, 512, 512));  // a Linear on a batch: the backend's
}

TEST_SUITE_END();
