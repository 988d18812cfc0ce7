// The GEMM profile (gemm/gemm_profile.hpp): shapes, calls and times of the products made
// while it is on, nothing while it is off, and its report.
#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/gemm/gemm_profile.hpp>
#include "tests/test_util.hpp"

#include <doctest/doctest.h>

#include <vector>

TEST_SUITE_BEGIN("engine");

using namespace xtgrad;

TEST_CASE("gemm profile: records each shape's calls while on, nothing while off, and reports them") {
    const bool was_on = gemm_profiling();
    std::vector<float> a(64, 1.f), b(64, 2.f), c(64, 0.f);
    reset_gemm_profile();
    set_gemm_profiling(true);
    for (int i = 0; i < 3; ++i) gemm(false, true, 8, 5, 3, 1.f, a.data(), b.data(), 0.f, c.data());
    gemm(true, false, 4, 4, 4, 1.f, a.data(), b.data(), 0.f, c.data());
    gemm(false, false, 0, 4, 4, 1.f, a.data(), b.data(), 0.f, c.data());  // empty: no product, no record
    CHECK(c[0] == 8.f);  // the profiled products still computed: 4 × (1 · 2)
    set_gemm_profiling(false);
    gemm(false, false, 2, 2, 2, 1.f, a.data(), b.data(), 0.f, c.data());  // off: not recorded
    const std::vector<GemmShapeStats> shapes = gemm_profile();
    REQUIRE(shapes.size() == 2);
    for (const GemmShapeStats& s : shapes) {
        CHECK(s.ms >= 0);
        if (s.M == 8) CHECK((s.calls == 3 && !s.trans_a && s.trans_b && s.N == 5 && s.K == 3));
        else CHECK((s.calls == 1 && s.trans_a && !s.trans_b && s.M == 4 && s.N == 4 && s.K == 4));
    }
    const std::string report = gemm_profile_report();
    CHECK(report.find("GEMM profile: 2 shapes") != std::string::npos);
    CHECK(report.find("NT") != std::string::npos);
    CHECK(report.find("8x5x3") != std::string::npos);
    CHECK(report.find("TN") != std::string::npos);
    reset_gemm_profile();
    CHECK(gemm_profile().empty());
    set_gemm_profiling(was_on);
}
