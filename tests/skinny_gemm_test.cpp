// The skinny kernels (gemm/skinny_gemm.hpp) against a double-precision reference (xtensor-blas), called
// directly and through gemm_ld's routing (which sends small products to small_gemm, and skinny ones
// to these kernels where the backend prefers them): every layout with the skinny side on M, N or K, tails of the SIMD width,
// leading dimensions wider than the matrix, alpha/beta, and 1 or 2 threads.
#include "tests/reference_gemm.hpp"
#include "tests/test_util.hpp"

#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/gemm/skinny_avx512.hpp>
#include <xtgrad/gemm/skinny_gemm.hpp>
#include <xtgrad/autograd/speed_switches.hpp>
#include <xtgrad/simd/cpu_isa.hpp>
#include <xtgrad/simd/cpu_model.hpp>
#include "xtgrad_simd_config.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;

namespace {

using Product = test::GemmCase;
using test::random_buffer;

// The skinny kernels themselves, whatever gemm_ld's routing; a product they refuse leaves a NaN in C.
void skinny_door(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                 float beta, float* C, int ldc) {
    if (!skinny_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) C[0] = std::numeric_limits<float>::quiet_NaN();
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
    products.push_back({false, true, 7, 70, 512});   // skinny_nt's AVX-512 tiles with their prefetch ahead
    products.push_back({false, false, 300, 7, 33});  // a Conv1d's W·x: skinny_nt through Cᵀ (gemm_ld routes it there too)
    std::vector<Isa> isas{Isa::baseline};  // skinny_nt has an AVX-512 kernel: both are checked
    if (avx512_available()) isas.push_back(Isa::avx512);
    for (Isa isa : isas) {
        const IsaScope scope(isa);
        for (int threads : {1, 2}) {
            set_num_threads(threads);
            for (const Product& p : products)
                for (test::GemmDoor door : {test::GemmDoor(&skinny_door), test::GemmDoor(&gemm_ld)}) {
                    INFO(test::describe(p));
                    CAPTURE(threads);
                    CAPTURE(static_cast<int>(isa));
                    // K's float rounding (gemm_tolerance), at least 1e-5: the (7, 70, 512) product with
                    // alpha -2 read 1.17e-5 through oneDNN's AVX2 kernel on the Zen 3
                    const auto bound = [&](float alpha) { return std::max(1e-5, test::gemm_tolerance(p.K, alpha)); };
                    CHECK(test::gemm_error(door, p, 1.f, 0.f) < bound(1.f));  // a fresh gradient: C not read
                    CHECK(test::gemm_error(door, p, 0.5f, 1.f) < bound(0.5f));  // accumulate into C
                    CHECK(test::gemm_error(door, p, -2.f, 0.25f) < bound(-2.f));
                }
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
    skinny_door(p.ta, p.tb, p.M, p.N, p.K, 1.f, A.data(), 512, B.data(), 512, 0.f, one.data(), 2048);
    set_num_threads(2);
    skinny_door(p.ta, p.tb, p.M, p.N, p.K, 1.f, A.data(), 512, B.data(), 512, 0.f, two.data(), 2048);
    set_num_threads(1);
    CHECK(one == two);
}

TEST_CASE("the AVX-512 skinny kernels give the same bits whether they prefetch the weight into L1 or L2") {
    // XTGRAD_SKINNY_PREFETCH_L2 (read once per process) picks one; both are checked here, on
    // tutorial C's feed-forward products on 7 rows and on shapes with tails (5 rows, N not a
    // multiple of the 4-row tile, K not of 16).
#if XTGRAD_HAVE_AVX512_KERNELS
    if (!avx512_available()) return;
    for (const auto& shape : {std::tuple{7, 2048, 512}, std::tuple{5, 70, 33}}) {
        const int M = std::get<0>(shape), N = std::get<1>(shape), K = std::get<2>(shape);
        INFO("M " << M << ", N " << N << ", K " << K);
        const std::vector<float> A = random_buffer(static_cast<std::size_t>(M) * K, 9),
                                 W = random_buffer(static_cast<std::size_t>(N) * K, 10),
                                 dy = random_buffer(static_cast<std::size_t>(M) * N, 11);
        const auto nt = [&](detail::SkinnyPrefetch level) {  // y = x · Wᵀ: W (N, K)
            std::vector<float> C(static_cast<std::size_t>(M) * N);
            detail::skinny_nt_columns_avx512(M, 0, N, N, K, 1.f, A.data(), K, W.data(), K, 0.f, C.data(), N, level);
            return C;
        };
        const auto nn = [&](detail::SkinnyPrefetch level) {  // dx = dy · W: dy (M, N), W (N, K)
            std::vector<float> C(static_cast<std::size_t>(M) * K);
            detail::skinny_nn_columns_avx512(M, 0, K, N, 1.f, dy.data(), N, W.data(), K, 0.f, C.data(), K, level);
            return C;
        };
        const std::vector<float> y1 = nt(detail::SkinnyPrefetch::l1), dx1 = nn(detail::SkinnyPrefetch::l1);
        CHECK(y1 == nt(detail::SkinnyPrefetch::l2));
        CHECK(dx1 == nn(detail::SkinnyPrefetch::l2));
        // and what the routed kernel gives, whichever level it took: these kernels where they are
        // the active set (XTGRAD_ISA=baseline routes to the AVX2 ones, other sums)
        std::vector<float> y(y1.size());
        skinny_door(false, true, M, N, K, 1.f, A.data(), K, W.data(), K, 0.f, y.data(), N);
        if (active_isa() == Isa::avx512) CHECK(y == y1);
    }
#else
    CHECK_FALSE(avx512_available());  // a build without the kernels never runs them
#endif
}

TEST_CASE("the skinny kernels agree with the GEMM backend on a Linear layer's three products") {
    // x (7, 512), W (1024, 512), dy (7, 1024): forward, dx and dW (2 MiB: streamed).
    // Both sum in float, in different orders: relative differences of ~1e-5 are rounding.
    const std::vector<float> x = random_buffer(7 * 512, 6), w = random_buffer(1024 * 512, 7), dy = random_buffer(7 * 1024, 8);
    const auto compare = [](bool ta, bool tb, int M, int N, int K, const float* A, int lda, const float* B, int ldb) {
        std::vector<float> ours(static_cast<std::size_t>(M) * N), blas(ours.size());
        skinny_door(ta, tb, M, N, K, 1.f, A, lda, B, ldb, 0.f, ours.data(), N);
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

TEST_CASE("products with an inner dimension of 1 to 7 equal a plain loop, in every layout, path and thread count") {
    // C (M, N) = alpha · op(A) (M, K) · op(B) (K, N) + beta · C with K <= 7: a Linear's weight
    // gradient (op(A) = dyᵀ: trans_a) or a kernel-1 Conv1d's (op(B) = xᵀ: trans_b), which has an
    // AVX-512 kernel (gemm/skinny_avx512.cpp). skinny_tn directly, and skinny_gemm in all four
    // layouts where it sends them there (M and N above kSkinnyRows). Rows and columns that are
    // not multiples of 16 (masked tails), a row past the kernel's 1024-column panel, leading
    // dimensions wider than the rows, C's padding left alone, beta = 0 never reading C.
    std::vector<Isa> isas{Isa::baseline};
    if (avx512_available()) isas.push_back(Isa::avx512);
    constexpr float kPadding = -777.f;
    int checked = 0, expected = 0;
    for (Isa isa : isas) {
        const IsaScope scope(isa);
        for (int threads : {1, 2}) {
            set_num_threads(threads);
            for (int K = 1; K <= 7; ++K)
                for (const auto& [M, N] : {std::pair{1, 1}, {17, 15}, {18, 17}, {33, 64}, {70, 65}, {40, 1030}, {300, 100}})
                    for (const bool ta : {true, false})
                        for (const bool tb : {false, true})
                            for (const auto& [alpha, beta] : {std::pair{1.f, 0.f}, {-1.5f, 0.f}, {0.75f, 1.f}, {-1.5f, 0.5f}}) {
                                const bool through_gemm = M > kSkinnyRows && N > kSkinnyRows;
                                if (!through_gemm && (!ta || tb)) continue;  // skinny_tn's own layout only
                                ++expected;
                                // A stored (K, M) when ta, else (M, K); B (K, N), or (N, K) when tb
                                const int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 7;
                                const std::vector<float> A = random_buffer(static_cast<std::size_t>(ta ? K : M) * lda, 11 + K);
                                const std::vector<float> B = random_buffer(static_cast<std::size_t>(tb ? N : K) * ldb, 23 + K);
                                const auto a = [&](int m, int k) { return A[ta ? static_cast<std::size_t>(k) * lda + m : static_cast<std::size_t>(m) * lda + k]; };
                                const auto b = [&](int k, int n) { return B[tb ? static_cast<std::size_t>(n) * ldb + k : static_cast<std::size_t>(k) * ldb + n]; };
                                std::vector<float> C = random_buffer(static_cast<std::size_t>(M) * ldc, 37 + K);
                                for (int m = 0; m < M; ++m)
                                    for (int n = N; n < ldc; ++n) C[static_cast<std::size_t>(m) * ldc + n] = kPadding;
                                const std::vector<float> C0 = C;
                                if (beta == 0.f)  // must not be read: a NaN would show in the result
                                    for (int m = 0; m < M; ++m)
                                        for (int n = 0; n < N; ++n) C[static_cast<std::size_t>(m) * ldc + n] = std::nanf("");
                                if (through_gemm)
                                    CHECK(skinny_gemm(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc));
                                else
                                    skinny_tn(M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
                                double worst = 0;
                                bool padding_kept = true;
                                for (int m = 0; m < M; ++m) {
                                    for (int n = 0; n < N; ++n) {
                                        double want = 0;  // the plain loop, in double
                                        for (int k = 0; k < K; ++k) want += static_cast<double>(a(m, k)) * b(k, n);
                                        want = alpha * want +
                                               (beta == 0.f ? 0.0 : beta * static_cast<double>(C0[static_cast<std::size_t>(m) * ldc + n]));
                                        const double got = C[static_cast<std::size_t>(m) * ldc + n];
                                        worst = std::isfinite(got) ? std::max(worst, std::abs(got - want) / (1 + std::abs(want))) : 1e30;
                                    }
                                    for (int n = N; n < ldc; ++n)
                                        padding_kept = padding_kept && C[static_cast<std::size_t>(m) * ldc + n] == kPadding;
                                }
                                // one string first: INFO's lambda cannot take the loops' bindings (M, N, alpha, beta) in Clang 14
                                std::ostringstream where;
                                where << "isa " << isa_name(isa) << " threads " << threads << " ta " << ta << " tb " << tb << " M " << M
                                      << " N " << N << " K " << K << " alpha " << alpha << " beta " << beta;
                                INFO(where.str());
                                CHECK(worst < 1e-5);
                                CHECK(padding_kept);
                                ++checked;
                            }
        }
    }
    set_num_threads(1);
    CHECK(checked == expected);
    CHECK(checked == static_cast<int>(isas.size()) * 2 * 7 * (2 + 5 * 4) * 4);
}

TEST_CASE("a winter weight gradient through gemm_ld: two threads give the one-thread result exactly") {
    // dW (512, 2048) = dyᵀ · x over 7 rows, as the Linear backward calls it (trans_a), fresh and
    // accumulated: the rows split over threads, each element summed in the same order.
    const int M = 512, N = 2048, K = 7;
    const std::vector<float> dy = random_buffer(static_cast<std::size_t>(K) * M, 41), x = random_buffer(static_cast<std::size_t>(K) * N, 43);
    const std::vector<float> start = random_buffer(static_cast<std::size_t>(M) * N, 47);
    for (const float beta : {0.f, 1.f}) {
        std::vector<float> one = start, two = start;
        set_num_threads(1);
        gemm_ld(true, false, M, N, K, 1.f, dy.data(), M, x.data(), N, beta, one.data(), N);
        set_num_threads(2);
        gemm_ld(true, false, M, N, K, 1.f, dy.data(), M, x.data(), N, beta, two.data(), N);
        set_num_threads(1);
        CAPTURE(beta);
        CHECK(one == two);
        CHECK(one != start);
    }
}

TEST_CASE("a big fresh weight gradient: streamed stores or, under ResultReadAtOnce, plain ones give the same bits") {
    // dW (512, 600) = dyᵀ · x over 7 rows (1.2 MiB: streamed unless the result is read at once,
    // on AVX-512 where XTGRAD_SKINNY_STREAMED_GRADIENT is on, set both ways here), into C one
    // float past a 64-byte line, with a row stride that is no multiple of 16, so each row starts
    // on another alignment: the streamed kernel's first columns go alone.
    const int M = 512, N = 600, K = 7, ldc = N + 3;
    const std::vector<float> dy = random_buffer(static_cast<std::size_t>(K) * M, 51), x = random_buffer(static_cast<std::size_t>(K) * N, 53);
    std::vector<Isa> isas{Isa::baseline};
    if (avx512_available()) isas.push_back(Isa::avx512);
    const bool default_streamed = detail::skinny_streamed_gradient();
    for (Isa isa : isas) {
        const IsaScope scope(isa);
        for (const bool streamed_switch : {true, false})
        for (int threads : {1, 2}) {
            detail::set_speed_switch(detail::kSkinnyStreamedGradientSwitch, streamed_switch);
            set_num_threads(threads);
            std::vector<float> streamed(static_cast<std::size_t>(M) * ldc + 32, -5.f), cached = streamed;
            float* s = streamed.data() + 1;
            float* c = cached.data() + 1;
            gemm_ld(true, false, M, N, K, 1.f, dy.data(), M, x.data(), N, 0.f, s, ldc);
            CHECK_FALSE(detail::result_read_at_once());
            {
                const ResultReadAtOnce read_next;
                CHECK(detail::result_read_at_once());
                gemm_ld(true, false, M, N, K, 1.f, dy.data(), M, x.data(), N, 0.f, c, ldc);
            }
            CHECK_FALSE(detail::result_read_at_once());
            CAPTURE(isa_name(isa));
            CAPTURE(threads);
            CAPTURE(streamed_switch);
            CHECK(streamed == cached);
            CHECK(test::gemm_error(&gemm_ld, {true, false, M, N, K}, 1.f, 0.f) < 1e-5);
            bool padding_kept = true;  // columns N..ldc of each row, and the float before C
            for (int m = 0; m < M; ++m)
                for (int n = N; n < ldc; ++n) padding_kept = padding_kept && s[static_cast<std::ptrdiff_t>(m) * ldc + n] == -5.f;
            CHECK(padding_kept);
            CHECK(streamed[0] == -5.f);
        }
    }
    detail::set_speed_switch(detail::kSkinnyStreamedGradientSwitch, default_streamed);
    set_num_threads(1);
}

TEST_CASE("skinny_nt: a row of W gives the same bits in a tile of 4 rows as alone") {
    // The 4-row tiles sum their 28 accumulators 4 at a time (lane_sums4), a row alone with
    // lane_sum: the same pairs in the same order, so a Linear's output does not depend on where its
    // row falls. K = 512 (tutorial C's) and 37 (a masked tail), 1 to 7 rows of x.
    if (!avx512_available()) return;
    const IsaScope scope(Isa::avx512);
    for (const int K : {512, 37})
        for (const int M : {1, 3, 7}) {
            const int N = 9;  // two tiles of 4 and a row alone
            const std::vector<float> x = random_buffer(static_cast<std::size_t>(M) * K, 61 + K), w = random_buffer(static_cast<std::size_t>(N) * K, 67 + K);
            std::vector<float> tiled(static_cast<std::size_t>(M) * N), alone(tiled.size());
            skinny_nt(M, N, K, 1.f, x.data(), K, w.data(), K, 0.f, tiled.data(), N);
            for (int n = 0; n < N; ++n)  // one row of W: C's column n, through the one-row path
                skinny_nt(M, 1, K, 1.f, x.data(), K, w.data() + static_cast<std::ptrdiff_t>(n) * K, K, 0.f, alone.data() + n, N);
            CAPTURE(K);
            CAPTURE(M);
            CHECK(tiled == alone);
        }
}

TEST_CASE("gemm_ld sends skinny products to the skinny kernels where they were measured to win") {
    // OpenBLAS always; oneDNN on AVX-512, and on the Zen 3's AVX2 (AMD family 25, not a Zen 4: gemm/blas.cpp)
    const bool zen3 = cpu_model().is_amd_zen3();
    const bool openblas = std::string(gemm_backend_name()) == "openblas";
    CHECK(detail::skinny_kernels_route() == (openblas || active_isa() == Isa::avx512 || zen3));
    const IsaScope scope(Isa::baseline);
    CHECK(detail::skinny_kernels_route() == (openblas || zen3));
}

TEST_CASE("the streamed gradient's default follows the CPU: on for the Zen 4 and Intel family 6, where measured") {
    // XTGRAD_SKINNY_STREAMED_GRADIENT is unset in the suite's environment
    CHECK(detail::kSkinnyStreamedGradientSwitch.unset_means() == (cpu_model().is_amd_zen4() || cpu_model().is_intel(6)));
}

TEST_SUITE_END();
