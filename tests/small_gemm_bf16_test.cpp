// small_gemm_bf16 (gemm/small_gemm.hpp): op(A) and op(B) rounded to bf16, products summed in
// fp32, against the double-precision product of the rounded operands, in every layout, with odd
// K (a last pair half zero), rows around the tile height (6), columns around the batch (16),
// tutorial B's attention slices, alpha/beta and padded leading dimensions, on vdpbf16ps and on
// AMX's tiles where they run; gemm_ld(DType::bf16) hands it the medium blocks; where it does not
// run, it refuses.
#include "tests/autocast_util.hpp"
#include "tests/reference_gemm.hpp"
#include "tests/speed_switch_scope.hpp"
#include "tests/test_util.hpp"

#include <xtgrad/autograd/speed_switches.hpp>
#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/gemm/small_gemm.hpp>
#include <xtgrad/simd/cpu_isa.hpp>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;

namespace {

std::vector<float> magnitudes(const std::vector<float>& v) {
    std::vector<float> r(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) r[i] = std::abs(v[i]);
    return r;
}

// The largest |C - (alpha · op(round A) · op(round B) + beta · C0)| over fp32 summation's bound
// (1e-5 of alpha · Σ|a||b| + |beta · C0|): below 1 when right. C's padding must stay as it was;
// with beta = 0, C starts as NaN (never read).
double bf16_error(const test::GemmCase& p, float alpha, float beta) {
    const int a_rows = p.ta ? p.K : p.M, a_cols = p.ta ? p.M : p.K, b_rows = p.tb ? p.N : p.K, b_cols = p.tb ? p.K : p.N;
    const int lda = a_cols + 3, ldb = b_cols + 5, ldc = p.N + 2;
    const std::vector<float> A = test::random_buffer(static_cast<std::size_t>(a_rows) * lda, 1),
                             B = test::random_buffer(static_cast<std::size_t>(b_rows) * ldb, 2);
    std::vector<float> C0 = test::random_buffer(static_cast<std::size_t>(p.M) * ldc, 3);
    if (beta == 0.f)
        for (int m = 0; m < p.M; ++m)
            std::fill_n(C0.begin() + static_cast<std::ptrdiff_t>(m) * ldc, p.N, std::numeric_limits<float>::quiet_NaN());
    std::vector<float> C = C0;
    small_gemm_bf16(p.ta, p.tb, p.M, p.N, p.K, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
    const std::vector<float> Ar = autocast_test::rounded(A), Br = autocast_test::rounded(B);
    const std::vector<double> exact = test::reference_gemm(p.ta, p.tb, p.M, p.N, p.K, Ar.data(), lda, Br.data(), ldb),
                              size = test::reference_gemm(p.ta, p.tb, p.M, p.N, p.K, magnitudes(Ar).data(), lda,
                                                          magnitudes(Br).data(), ldb);
    double worst = 0;
    for (int m = 0; m < p.M; ++m) {
        for (int n = 0; n < p.N; ++n) {
            const std::size_t i = static_cast<std::size_t>(m) * p.N + n, c = static_cast<std::size_t>(m) * ldc + n;
            const double prior = beta == 0.f ? 0.0 : beta * static_cast<double>(C0[c]);
            const double bound = 1e-5 * (std::abs(alpha) * size[i] + std::abs(prior)) + 1e-30;
            const double error = std::abs(C[c] - (alpha * exact[i] + prior)) / bound;
            worst = std::isfinite(error) ? std::max(worst, error) : 1e30;
        }
        for (int n = p.N; n < ldc; ++n)
            if (std::bit_cast<std::uint32_t>(C[static_cast<std::size_t>(m) * ldc + n]) !=
                std::bit_cast<std::uint32_t>(C0[static_cast<std::size_t>(m) * ldc + n]))
                return 1e30;
    }
    return worst;
}

}  // namespace

// The kernels small_gemm_bf16 can run here: vdpbf16ps always, AMX's tiles where they run
// (XTGRAD_SMALL_GEMM_AMX chooses).
std::vector<bool> amx_choices() {
    if (small_gemm_amx_available()) return {false, true};
    return {false};
}

TEST_CASE("small_gemm_bf16 equals the product of the rounded operands in every layout") {
    if (!small_gemm_bf16_available()) {
        CHECK_FALSE(small_gemm_amx_available());
        float a = 1.f, b = 2.f, c = 0.f;
        test::expect_error([&] { small_gemm_bf16(false, false, 1, 1, 1, 1.f, &a, 1, &b, 1, 0.f, &c, 1); },
                           {"small_gemm_bf16: "});
        CHECK(c == 0.f);
        return;
    }
    std::vector<test::GemmCase> products;
    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            // rows around vdpbf16ps's tile height (6) and AMX's tiles (16, blocks of 32), columns
            // around a batch (16), K around AMX's step (32 values, 16 pairs)
            for (int M : {1, 5, 6, 7, 13, 16, 17, 33})
                for (int N : {1, 3, 15, 16, 17, 32, 33, 40, 65})
                    for (int K : {1, 2, 9, 16, 31, 32, 33, 64, 65}) products.push_back({ta, tb, M, N, K});
            // tutorial B's 99- and 100-token slices: B's pairs transposed in 16 x 16 blocks with tails
            products.push_back({ta, tb, 100, 100, 64});
            products.push_back({ta, tb, 99, 99, 64});
            products.push_back({ta, tb, 100, 64, 100});
            products.push_back({ta, tb, 99, 64, 99});
            products.push_back({ta, tb, 150, 97, 129});
        }
    for (const bool amx : amx_choices()) {
        INFO("AMX tiles: " << amx);
        const test::SpeedSwitchScope kernel(detail::kSmallGemmAmxSwitch, amx);
        // K = 0: C = beta · C (no pair to pack; nothing read before or after the buffers)
        for (bool ta : {false, true}) {
            std::vector<float> c(8 * 16, 2.f);
            const float a = 1.f, b = 1.f;
            small_gemm_bf16(ta, true, 8, 16, 0, 1.f, &a, ta ? 8 : 1, &b, 1, 0.5f, c.data(), 16);
            CHECK(c == std::vector<float>(8 * 16, 1.f));
        }
        for (const test::GemmCase& p : products) {
            INFO(test::describe(p));
            CHECK(bf16_error(p, 1.f, 0.f) < 1.0);     // a fresh result: C not read
            CHECK(bf16_error(p, 0.5f, 1.f) < 1.0);    // accumulate into C
            CHECK(bf16_error(p, -2.f, 0.25f) < 1.0);  // general alpha and beta
        }
    }
}

TEST_CASE("small_gemm_bf16 refuses negative sizes and short leading dimensions on either kernel, C untouched") {
    // (checked before the kernel is chosen: the same Error where no kernel runs)
    // a no-context attack: M = -1 or K = -3 wrote before the AMX kernel's buffers (heap corruption)
    std::vector<float> A(64, 1.f), B(64, 1.f), C(64, 7.f);
    struct Bad { int M, N, K, lda, ldb, ldc; const char* says; };
    const Bad bad[] = {{-1, 4, 4, 4, 4, 4, "negative size M = -1"}, {4, -5, 4, 4, 4, 4, "negative size"},
                       {4, 4, -3, 4, 4, 4, "K = -3"}, {-16, 16, 16, 16, 16, 16, "negative size"},
                       {4, 4, 8, 4, 4, 4, "lda = 4 (at least 8)"}, {4, 8, 4, 4, 4, 4, "ldc = 4 (at least 8)"}};
    for (const bool amx : amx_choices()) {
        const test::SpeedSwitchScope kernel(detail::kSmallGemmAmxSwitch, amx);
        for (const Bad& b : bad) {
            CAPTURE(b.says);
            test::expect_error([&] { small_gemm_bf16(false, false, b.M, b.N, b.K, 1.f, A.data(), b.lda, B.data(), b.ldb,
                                                     0.f, C.data(), b.ldc); },
                               {"small_gemm_bf16: ", b.says});
            CHECK(C == std::vector<float>(64, 7.f));
        }
        // M or N = 0: nothing to write
        small_gemm_bf16(false, false, 0, 4, 4, 1.f, A.data(), 4, B.data(), 4, 0.f, C.data(), 4);
        small_gemm_bf16(false, false, 4, 0, 4, 1.f, A.data(), 4, B.data(), 4, 0.f, C.data(), 1);
        CHECK(C == std::vector<float>(64, 7.f));
    }
}

TEST_CASE("small_gemm_bf16 after a product far past the medium blocks: right, and the next one too") {
    if (!small_gemm_bf16_available()) {  // refused, as any product there
        float a = 1.f, b = 2.f, c = 0.f;
        test::expect_error([&] { small_gemm_bf16(false, false, 1, 1, 1, 1.f, &a, 1, &b, 1, 0.f, &c, 1); },
                           {"small_gemm_bf16: "});
        CHECK(c == 0.f);
        return;
    }
    // a direct call on 100 000 rows packs ~6 MB per thread, freed after it (kept, a call on
    // 1e6 rows held 0.5 GB per thread), so later products pack into fresh buffers
    for (const bool amx : amx_choices()) {
        CAPTURE(amx);
        const test::SpeedSwitchScope kernel(detail::kSmallGemmAmxSwitch, amx);
        const int M = 100000, N = 16, K = 30;
        std::vector<float> A(static_cast<std::size_t>(M) * K), B(static_cast<std::size_t>(K) * N, 1.f),
            C(static_cast<std::size_t>(M) * N);
        for (std::size_t i = 0; i < A.size(); ++i) A[i] = static_cast<float>(static_cast<int>(i % 5) - 2);
        small_gemm_bf16(false, false, M, N, K, 1.f, A.data(), K, B.data(), N, 0.f, C.data(), N);
        bool right = true;  // row i: sum of its K small integers, exact
        for (int i = 0; i < M && right; ++i) {
            float want = 0.f;
            for (int k = 0; k < K; ++k) want += A[static_cast<std::size_t>(i) * K + k];
            for (int j = 0; j < N; ++j) right = right && C[static_cast<std::size_t>(i) * N + j] == want;
        }
        CHECK(right);
        CHECK(bf16_error({false, true, 100, 100, 64}, 1.f, 0.f) < 1.0);
    }
}

TEST_CASE("small_gemm_bf16 on AMX tiles: exact on exact sums, and unmoved by oneDNN's AMX products between calls") {
    if (!small_gemm_amx_available()) {
        // nothing to choose: the switch's default is off, and a 1 still runs vdpbf16ps
        CHECK_FALSE(detail::small_gemm_amx_by_cpu());
        return;
    }
    CHECK(detail::small_gemm_amx_by_cpu());
    // small integers: every product and sum exact in fp32, so both kernels give the same bits
    const int M = 37, N = 45, K = 70;
    std::vector<float> A(static_cast<std::size_t>(M) * K), B(static_cast<std::size_t>(K) * N);
    for (std::size_t i = 0; i < A.size(); ++i) A[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
    for (std::size_t i = 0; i < B.size(); ++i) B[i] = static_cast<float>(static_cast<int>(i % 5) - 2);
    const auto product = [&](bool amx) {
        const test::SpeedSwitchScope kernel(detail::kSmallGemmAmxSwitch, amx);
        std::vector<float> C(static_cast<std::size_t>(M) * N);
        small_gemm_bf16(false, false, M, N, K, 1.f, A.data(), K, B.data(), N, 0.f, C.data(), N);
        return C;
    };
    const std::vector<float> tiles = product(true);
    CHECK(tiles == product(false));
    const std::vector<double> exact = test::reference_gemm(false, false, M, N, K, A.data(), K, B.data(), N);
    CHECK(std::vector<double>(tiles.begin(), tiles.end()) == exact);
    // oneDNN's bf16 products run on AMX too, with tile configurations of their own, on this thread
    const autocast_test::Bf16Here here;
    if (!here) return;  // the backend has no bf16 product (OpenBLAS): none of oneDNN's tiles to meet
    const int big = 256;
    const std::vector<float> X = test::random_buffer(static_cast<std::size_t>(big) * big, 7);
    std::vector<float> Y(X.size());
    for (int round = 0; round < 3; ++round) {
        gemm_ld(DType::bf16, false, false, big, big, big, 1.f, X.data(), big, X.data(), big, 0.f, Y.data(), big);
        CHECK(product(true) == tiles);
    }
}

TEST_CASE("gemm_ld(DType::bf16) runs the medium blocks in small_gemm_bf16 where it pays, else in fp32") {
    // the default, read before Bf16Here holds the medium blocks in bf16 for the case: on only where
    // the CPU's bf16 dot products pay (not on an Intel with AMX, whose vdpbf16ps runs at half rate)
    // or where AMX's tiles can run them
    if (detail::medium_blocks_in_bf16()) CHECK((autocast::bf16_dot_products_pay() || small_gemm_amx_available()));
    const autocast_test::Bf16Here here;
    if (!here) return;
    const int M = 100, N = 100, K = 64;  // q·kᵀ on tutorial B's 100-token slices
    const std::vector<float> A = test::random_buffer(static_cast<std::size_t>(M) * K, 4),
                             B = test::random_buffer(static_cast<std::size_t>(N) * K, 5);
    const auto product = [&](auto door) {
        std::vector<float> C(static_cast<std::size_t>(M) * N);
        door(C.data());
        return C;
    };
    const auto routed = [&](float* C) { gemm_ld(DType::bf16, false, true, M, N, K, 0.125f, A.data(), K, B.data(), K, 0.f, C, N); };
    const std::vector<float> fp32 =
        product([&](float* C) { gemm_ld(false, true, M, N, K, 0.125f, A.data(), K, B.data(), K, 0.f, C, N); });
    if (small_gemm_takes(M, N, K) && detail::medium_blocks_in_bf16()) {
        CHECK(small_gemm_bf16_available());
        CHECK_FALSE(bf16_product_in_fp32(M, N, K));
        const std::vector<float> direct = product(
            [&](float* C) { small_gemm_bf16(false, true, M, N, K, 0.125f, A.data(), K, B.data(), K, 0.f, C, N); });
        CHECK(product(routed) == direct);
        CHECK(direct != fp32);  // rounded: not fp32's result
        // XTGRAD_SMALL_GEMM_BF16=0: small_gemm's fp32 kernels, fp32's result bit for bit
        detail::set_speed_switch(detail::kSmallGemmBf16Switch, false);
        CHECK(bf16_product_in_fp32(M, N, K));
        CHECK(product(routed) == fp32);
        detail::set_speed_switch(detail::kSmallGemmBf16Switch, true);
    }
    {  // without AVX-512 kernels small_gemm takes no medium block: oneDNN's bf16 product runs it
        const IsaScope baseline(Isa::baseline);
        CHECK_FALSE(small_gemm_bf16_available());
        CHECK_FALSE(detail::medium_blocks_in_bf16());
        CHECK_FALSE(small_gemm_takes(M, N, K));
        CHECK_FALSE(bf16_product_in_fp32(M, N, K));
    }
}

TEST_SUITE_END();
