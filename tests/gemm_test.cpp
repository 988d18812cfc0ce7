// The GEMM door (gemm/blas.hpp) on this process's backend (XTGRAD_GEMM_BACKEND: oneDNN or
// OpenBLAS; tools/test.sh runs the suite on both), against a double-precision reference
// (xtensor-blas): odd sizes, all four transpose layouts, padded leading dimensions, alpha and
// beta, K = 0, 1 x N and N x 1, and products big enough (in FLOPs or in bytes) to be split over two threads.
#include "tests/reference_gemm.hpp"
#include "tests/test_util.hpp"

#include <xtgrad/autograd/speed_switches.hpp>
#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/gemm/gemm_backend.hpp>
#include <xtgrad/gemm/transpose.hpp>
#include <xtgrad/simd/cpu_model.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;

namespace {

using Case = test::GemmCase;
using test::random_buffer;

std::vector<Case> cases() {
    std::vector<Case> out;
    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            for (int M : {1, 3, 17, 33, 70})
                for (int N : {1, 5, 31, 64})
                    for (int K : {0, 1, 7, 19, 100}) out.push_back({ta, tb, M, N, K});
            out.push_back({ta, tb, 1, 517, 300});   // a 1 x N row
            out.push_back({ta, tb, 517, 1, 300});   // an N x 1 column
            out.push_back({ta, tb, 257, 190, 129});  // split over 2 threads by rows (>= 4 MFLOP)
            out.push_back({ta, tb, 40, 401, 257});  // ... by columns
            out.push_back({ta, tb, 7, 512, 300});   // < 4 MFLOP but >= 512 KiB: split for its memory traffic
            out.push_back({ta, tb, 300, 512, 7});   // ... its weight gradient's shape
        }
    return out;
}

}  // namespace

TEST_CASE("gemm_ld and the backend equal a double-precision reference in every layout") {
    INFO("backend: " << gemm_backend_name());
    const int blas_before = blas_threads();
    for (int threads : {1, 2}) {
        set_num_threads(threads);
        set_blas_threads(threads);
        for (const Case& p : cases())
            for (test::GemmDoor door : {test::GemmDoor(&gemm_ld), test::GemmDoor(&gemm_backend)}) {
                INFO(test::describe(p));
                CAPTURE(threads);
                CHECK(test::gemm_error(door, p, 1.f, 0.f) < test::gemm_tolerance(p.K, 1.f));       // a fresh gradient: C not read
                CHECK(test::gemm_error(door, p, 0.5f, 1.f) < test::gemm_tolerance(p.K, 0.5f));     // accumulate into C
                CHECK(test::gemm_error(door, p, -2.f, 0.25f) < test::gemm_tolerance(p.K, -2.f));   // general alpha and beta
            }
    }
    set_num_threads(1);
    set_blas_threads(blas_before);
}

TEST_CASE("a product split over two threads equals the reference and the one-thread product closely") {
    // (600, 512) · (512, 512)ᵀ: big enough that blas.cpp splits it for oneDNN (OpenBLAS threads itself).
    const std::vector<float> A = random_buffer(600 * 512, 21), B = random_buffer(512 * 512, 22);
    std::vector<float> one(600 * 512), two(600 * 512);
    const int blas_before = blas_threads();
    set_num_threads(1);
    set_blas_threads(1);
    gemm(false, true, 600, 512, 512, 1.f, A.data(), B.data(), 0.f, one.data());
    set_num_threads(2);
    set_blas_threads(2);
    gemm(false, true, 600, 512, 512, 1.f, A.data(), B.data(), 0.f, two.data());
    set_num_threads(1);
    set_blas_threads(blas_before);
    const std::vector<double> ref = test::reference_gemm(false, true, 600, 512, 512, A.data(), 512, B.data(), 512);
    double worst = 0;
    for (std::size_t i = 0; i < ref.size(); ++i)
        worst = std::max({worst, std::abs(one[i] - ref[i]) / (1 + std::abs(ref[i])),
                          std::abs(two[i] - ref[i]) / (1 + std::abs(ref[i]))});
    CHECK(worst < test::gemm_tolerance(512, 1.f));
}

TEST_CASE("products with a narrow C, which blas.cpp reorients on oneDNN, equal the reference") {
    // Aᵀ·B with C (1030, 41) over 513 rows: computed as Cᵀ = Bᵀ·A, then transposed into C (beta
    // read or not); A·B with B (257, 90) and M >= 4N: B transposed first. Odd sizes (no 8 x 8
    // block fits exactly), padded leading dimensions, 1 and 2 threads; the shapes just outside
    // the rules too (K 500, N 513, K 2049, M < 4N).
    const Case narrow[] = {{true, false, 1030, 41, 513}, {false, false, 600, 90, 257}, {true, false, 1030, 41, 500},
                           {true, false, 1100, 513, 40}, {false, false, 600, 90, 2049}, {false, false, 300, 90, 257}};
    // A·B's reorientation depends on the CPU (detail::narrow_nn_transposed): both ways here.
    const int blas_before = blas_threads();
    const bool nn_before = detail::narrow_nn_transposed();
    for (bool nn_transposed : {true, false}) {
        detail::set_speed_switch(detail::kNarrowNnTransposedSwitch, nn_transposed);
        CHECK(detail::narrow_nn_transposed() == nn_transposed);
        for (int threads : {1, 2}) {
            set_num_threads(threads);
            set_blas_threads(threads);
            for (const Case& p : narrow) {
                INFO(test::describe(p));
                CAPTURE(threads);
                CAPTURE(nn_transposed);
                CHECK(test::gemm_error(&gemm_ld, p, 1.f, 0.f) < test::gemm_tolerance(p.K, 1.f));
                CHECK(test::gemm_error(&gemm_ld, p, 0.5f, 1.f) < test::gemm_tolerance(p.K, 0.5f));  // a gradient accumulated
                CHECK(test::gemm_error(&gemm_ld, p, -2.f, 0.25f) < test::gemm_tolerance(p.K, -2.f));
            }
        }
    }
    detail::set_speed_switch(detail::kNarrowNnTransposedSwitch, nn_before);
    set_num_threads(1);
    set_blas_threads(blas_before);
}

TEST_CASE("A·B with a narrow C is transposed first where it was measured faster: the Zen 5 (AMD family 26)") {
    // XTGRAD_NARROW_NN_TRANSPOSED is unset in the suite's environment: the CPU's default
    CHECK(detail::narrow_nn_transposed() == cpu_model().is_amd(26));
    CHECK(detail::kNarrowNnTransposedSwitch.unset_means() == cpu_model().is_amd(26));
}

// XTGRAD_BACKWARD_PRODUCTS_ON_OPENBLAS: with oneDNN the backend, A·B and Aᵀ·B run on OpenBLAS (one
// thread a call, split over the pool), A·Bᵀ stays on oneDNN. Right both ways, on 1 and 2 threads, and
// where the switch sends a product, its bits are OpenBLAS's own call's.
TEST_CASE("a backward's products (A·B, Aᵀ·B) on OpenBLAS where the switch says, the forward's A·Bᵀ on oneDNN") {
    CHECK(detail::kBackwardProductsOnOpenblasSwitch.unset_means() == cpu_model().is_amd_zen3());
    const bool before = detail::speed_switch_on(detail::kBackwardProductsOnOpenblasSwitch);
    const int blas_before = blas_threads();
    const std::vector<Case> products = {{false, false, 640, 512, 512}, {true, false, 512, 512, 640},
                                        {false, true, 640, 512, 512},  {true, true, 300, 70, 129},
                                        {false, false, 33, 64, 100},   {true, false, 517, 1, 300}};
    for (bool on : {true, false}) {
        detail::set_speed_switch(detail::kBackwardProductsOnOpenblasSwitch, on);
        for (int threads : {1, 2}) {
            set_num_threads(threads);
            set_blas_threads(threads);
            for (const Case& p : products) {
                INFO(test::describe(p));
                CAPTURE(on);
                CAPTURE(threads);
                CHECK(test::gemm_error(&gemm_ld, p, 1.f, 0.f) < test::gemm_tolerance(p.K, 1.f));
                CHECK(test::gemm_error(&gemm_ld, p, 0.5f, 1.f) < test::gemm_tolerance(p.K, 0.5f));
            }
        }
    }
    set_num_threads(1);
    // the routing itself, where oneDNN is the backend and OpenBLAS loads: gemm_ld's bits against each
    // library's own call, on one thread (K is never split, so the pool's split keeps them too)
    if (gemm_backend_name() == std::string("onednn")) {
        const int M = 96, N = 80, K = 300;
        const std::vector<float> A = random_buffer(static_cast<std::size_t>(M) * K, 41), B = random_buffer(
                                                                                            static_cast<std::size_t>(K) * N, 42);
        for (bool trans_a : {false, true})
            for (bool on : {true, false}) {
                CAPTURE(trans_a);
                CAPTURE(on);
                detail::set_speed_switch(detail::kBackwardProductsOnOpenblasSwitch, on);
                const int lda = trans_a ? M : K;
                std::vector<float> got(static_cast<std::size_t>(M) * N), own(got.size());
                gemm_ld(trans_a, false, M, N, K, 1.f, A.data(), lda, B.data(), N, 0.f, got.data(), N);
                const detail::GemmBackend& library = on ? detail::openblas_backend() : detail::onednn_backend();
                library.sgemm(trans_a, false, M, N, K, 1.f, A.data(), lda, B.data(), N, 0.f, own.data(), N);
                CHECK(got == own);
            }
    }
    detail::set_speed_switch(detail::kBackwardProductsOnOpenblasSwitch, before);
    set_blas_threads(blas_before);
}

TEST_CASE("transpose and add_transposed move every element once, in tiles or not") {
    for (const auto& shape : {std::pair{1, 1}, {8, 8}, {16, 16}, {17, 33}, {40, 3}, {3, 40}, {70, 45}}) {
        const int rows = shape.first, cols = shape.second;  // not a binding: CAPTURE's lambda takes them
        CAPTURE(rows);
        CAPTURE(cols);
        const int ld_src = cols + 2, ld_dst = rows + 3;
        const std::vector<float> src = random_buffer(static_cast<std::size_t>(rows) * ld_src, 31);
        std::vector<float> dst(static_cast<std::size_t>(cols) * ld_dst, -7.f);
        detail::transpose(src.data(), rows, cols, ld_src, dst.data(), ld_dst);
        bool exact = true, padding_kept = true;
        for (int c = 0; c < cols; ++c)
            for (int r = 0; r < ld_dst; ++r) {
                const float got = dst[static_cast<std::size_t>(c) * ld_dst + r];
                if (r < rows) exact = exact && got == src[static_cast<std::size_t>(r) * ld_src + c];
                else padding_kept = padding_kept && got == -7.f;
            }
        CHECK(exact);
        CHECK(padding_kept);
        // C (rows, cols) = dstᵀ + 0.5 · C: back to src's layout, plus half of what C held
        const int ldc = cols + 1;
        std::vector<float> C = random_buffer(static_cast<std::size_t>(rows) * ldc, 32);
        const std::vector<float> C0 = C;
        detail::add_transposed(dst.data(), rows, cols, ld_dst, 0.5f, C.data(), ldc);
        bool summed = true;
        for (int r = 0; r < rows; ++r)
            for (int c = 0; c < ldc; ++c) {
                const std::size_t i = static_cast<std::size_t>(r) * ldc + c;
                const float want = c < cols ? src[static_cast<std::size_t>(r) * ld_src + c] + 0.5f * C0[i] : C0[i];
                summed = summed && C[i] == want;
            }
        CHECK(summed);
    }
}

TEST_CASE("gemm_ld refuses a negative size or a leading dimension shorter than its row, before writing C") {
    const std::vector<float> a(64, 1.f), b(64, 1.f);
    std::vector<float> c(64, 5.f);
    const auto refused = [&](const char* what, const char* message, auto call) {
        CAPTURE(what);
        CHECK_THROWS_WITH_AS(call(), doctest::Contains(message), Error);
        CHECK(std::all_of(c.begin(), c.end(), [](float v) { return v == 5.f; }));
    };
    const char* negative = "gemm_ld: negative size";
    const char* short_ld = "gemm_ld: a leading dimension shorter than its rows";
    refused("K = -1", negative, [&] { gemm_ld(false, false, 2, 2, -1, 1.f, a.data(), 2, b.data(), 2, 0.f, c.data(), 2); });
    refused("M = -3", negative, [&] { gemm_ld(false, false, -3, 2, 2, 1.f, a.data(), 2, b.data(), 2, 0.f, c.data(), 2); });
    refused("ldc < N", short_ld, [&] { gemm_ld(false, false, 4, 4, 4, 1.f, a.data(), 4, b.data(), 4, 0.f, c.data(), 3); });
    refused("lda < K", short_ld, [&] { gemm_ld(false, false, 4, 4, 4, 1.f, a.data(), 3, b.data(), 4, 0.f, c.data(), 4); });
    refused("lda < M (A transposed)", short_ld, [&] { gemm_ld(true, false, 4, 4, 2, 1.f, a.data(), 3, b.data(), 4, 0.f, c.data(), 4); });
    refused("ldb < K (B transposed)", short_ld, [&] { gemm_ld(false, true, 4, 4, 4, 1.f, a.data(), 4, b.data(), 3, 0.f, c.data(), 4); });
    refused("the backend alone", "gemm_backend: a leading dimension",
            [&] { gemm_backend(false, false, 4, 4, 4, 1.f, a.data(), 3, b.data(), 4, 0.f, c.data(), 4); });
    // a zero-length row strides over nothing: any leading dimension >= 0 is its row
    gemm_ld(false, false, 2, 2, 0, 1.f, a.data(), 0, b.data(), 2, 0.f, c.data(), 2);
    CHECK(c[0] == 0.f);
}

TEST_CASE("alpha = 0 reads neither A nor B, and beta = 0 never reads C: C = beta · C, as BLAS") {
    // oneDNN's sgemm left a NaN of C in place under alpha = beta = 0; NaN operands stay unread too
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (const Case& p : {Case{false, false, 3, 5, 7}, Case{true, false, 64, 80, 3}, Case{false, true, 300, 300, 200}}) {
        const std::vector<float> a(static_cast<std::size_t>(p.M) * p.K, nan), b(static_cast<std::size_t>(p.K) * p.N, nan);
        for (const float beta : {0.f, 0.5f}) {
            std::vector<float> c(static_cast<std::size_t>(p.M) * p.N, beta == 0.f ? nan : 2.f), backend = c;
            gemm_ld(p.ta, p.tb, p.M, p.N, p.K, 0.f, a.data(), p.ta ? p.M : p.K, b.data(), p.tb ? p.K : p.N, beta, c.data(), p.N);
            gemm_backend(p.ta, p.tb, p.M, p.N, p.K, 0.f, a.data(), p.ta ? p.M : p.K, b.data(), p.tb ? p.K : p.N, beta,
                         backend.data(), p.N);
            INFO(test::describe(p));
            CAPTURE(beta);
            CHECK(std::all_of(c.begin(), c.end(), [&](float v) { return v == beta * 2.f; }));
            CHECK(c == backend);
        }
    }
}

TEST_SUITE_END();
