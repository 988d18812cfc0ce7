// The GEMM backends (gemm/gemm_backend.hpp) and XTGRAD_GEMM_BACKEND, which chooses one per
// process: each built backend against the double reference, in this one process (the suite's
// own products run on the chosen one: tools/test.sh runs the suite once per backend).
#include "tests/reference_gemm.hpp"
#include "tests/test_util.hpp"

#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/gemm/gemm_backend.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;

namespace {

std::vector<const detail::GemmBackend*> built_backends() {
    std::vector<const detail::GemmBackend*> out{&detail::openblas_backend()};
    if (detail::onednn_built()) out.push_back(&detail::onednn_backend());
    return out;
}

}  // namespace

TEST_CASE("XTGRAD_GEMM_BACKEND: unset or empty is the build's default, onednn and openblas name theirs") {
    const char* default_name = detail::onednn_built() ? "onednn" : "openblas";
    CHECK(std::string(detail::backend_from_env(nullptr).name) == default_name);
    CHECK(std::string(detail::backend_from_env("").name) == default_name);
    CHECK(std::string(detail::backend_from_env("openblas").name) == "openblas");
    if (detail::onednn_built()) {
        CHECK(std::string(detail::backend_from_env("onednn").name) == "onednn");
    } else {
        test::expect_error([] { (void)detail::backend_from_env("onednn"); },
                           {"XTGRAD_GEMM_BACKEND=onednn", "no oneDNN", "-Dgemm=openblas"});
    }
    // This process's: the one the variable named when the suite started, for good.
    const char* env = std::getenv("XTGRAD_GEMM_BACKEND");
    CHECK(std::string(gemm_backend_name()) == detail::backend_from_env(env).name);
    CHECK(&detail::active_backend() == &detail::backend_from_env(env));
}

TEST_CASE("XTGRAD_GEMM_BACKEND: any other value is an Error naming the variable, the value quoted and cut at 40 bytes") {
    const auto expected = [](const std::string& shown) {
        return detail::onednn_built()
                   ? "XTGRAD_GEMM_BACKEND: '" + shown + "' is neither onednn nor openblas (unset: onednn, the default)"
                   : "XTGRAD_GEMM_BACKEND: '" + shown + "' is not openblas, the one backend of this build (it has no oneDNN)";
    };
    for (const char* bad : {"OpenBLAS", "mkl", "onednn ", " openblas", "1", "openblas,onednn"}) {
        CAPTURE(bad);
        CHECK_THROWS_WITH_AS(detail::backend_from_env(bad), expected(bad).c_str(), Error);
    }
    CHECK_THROWS_WITH_AS(detail::backend_from_env("open\nblas\xff"), expected("open\\x0ablas\\xff").c_str(), Error);
    const std::string huge(100000, 'o');
    CHECK_THROWS_WITH_AS(detail::backend_from_env(huge.c_str()), expected(std::string(40, 'o') + "... (100000 bytes)").c_str(),
                         Error);
}

TEST_CASE("each built backend's sgemm equals the double reference, in every layout and at odd sizes") {
    for (const detail::GemmBackend* backend : built_backends()) {
        CAPTURE(backend->name);
        CHECK(std::string(backend->kernel()) != "");
        for (const bool ta : {false, true})
            for (const bool tb : {false, true})
                for (const test::GemmCase p : {test::GemmCase{ta, tb, 1, 1, 1}, test::GemmCase{ta, tb, 7, 512, 33},
                                               test::GemmCase{ta, tb, 37, 29, 41}, test::GemmCase{ta, tb, 130, 70, 257}}) {
                    INFO(test::describe(p));
                    CHECK(test::gemm_error(backend->sgemm, p, 0.5f, 0.f) < test::gemm_tolerance(p.K, 0.5f));
                    CHECK(test::gemm_error(backend->sgemm, p, -2.f, 1.f) < test::gemm_tolerance(p.K, -2.f));
                }
    }
}

TEST_CASE("each built backend takes and reports its thread count") {
    for (const detail::GemmBackend* backend : built_backends()) {
        CAPTURE(backend->name);
        const int before = backend->threads();
        CHECK(before >= 1);
        backend->set_threads(1);
        CHECK(backend->threads() == 1);
        backend->set_threads(0);  // at least 1 (OpenBLAS reads 0 as every core)
        CHECK(backend->threads() == 1);
        backend->set_threads(-3);
        CHECK(backend->threads() == 1);
        backend->set_threads(before);
        CHECK(backend->threads() == before);
    }
    CHECK(blas_threads() == detail::active_backend().threads());
}

TEST_CASE("OpenBLAS has no bf16 product: an Error naming the shape and the way out, C untouched") {
    const std::uint16_t a = 0x3f80, b = 0x4000;  // 1.0 and 2.0 in bf16
    float c = 7.f;
    test::expect_error([&] { detail::openblas_backend().gemm_bf16(false, false, 1, 1, 1, 1.f, &a, 1, &b, 1, nullptr, 0.f, &c, 1); },
                       {"gemm (bf16)", "OpenBLAS", "(1 x 1 x 1)", "XTGRAD_GEMM_BACKEND"});
    CHECK(c == 7.f);
}

TEST_SUITE_END();
