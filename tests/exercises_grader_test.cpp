// The exercises' grader (exercises/diagnose.hpp): the cause it names for a wrong answer must be
// the one the values show, never a guess the numbers do not support.
#include "exercises/diagnose.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

TEST_SUITE_BEGIN("exercises");

using xtgrad::Array;

TEST_CASE("diagnose names a zero answer, a sign and a scale, and calls near-zero noise no scale") {
    const Array want = {{0.5f, -1.f, 2.f}, {0.25f, 3.f, -4.f}};
    CHECK(grading::diagnose("dx", want, want, 1e-6).empty());
    CHECK(grading::diagnose("dx", Array(want * 0.f), want, 1e-6).find("is the TODO still there?") != std::string::npos);
    CHECK(grading::diagnose("dx", Array(-want), want, 1e-6).find("the opposite sign everywhere") != std::string::npos);
    CHECK(grading::diagnose("dx", Array(want * 2.f), want, 1e-6).find("off by ×2 everywhere") != std::string::npos);
    // values near 1e-10 that are no multiple of the answer (what an unwritten buffer or a lost
    // factor of h leaves): no "scale", only how far off they are
    const Array noise = {{1e-10f, 3e-10f, -2e-10f}, {5e-11f, 1e-10f, 7e-10f}};
    const std::string msg = grading::diagnose("dx", noise, want, 1e-6);
    CHECK(msg.find("6 of 6 elements off") != std::string::npos);
    CHECK(msg.find("scale") == std::string::npos);
    // a true scale of 1e-10 is still named as one
    CHECK(grading::diagnose("dx", Array(want * 1e-10f), want, 1e-6).find("off by ×1e-10 everywhere") != std::string::npos);
}

TEST_CASE("diagnose says NaN where the answer holds one, never 'off by inf'") {
    const Array want = {{0.5f, -1.f, 2.f}, {0.25f, 3.f, -4.f}};
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const std::string all = grading::diagnose("dx", Array(want * nan), want, 1e-6);
    CHECK(all.find("6 of 6 elements off, 6 of them NaN (the first at (0,0))") != std::string::npos);
    CHECK(all.find("a NaN or an infinity comes from 0/0") != std::string::npos);
    CHECK(all.find("off by inf") == std::string::npos);
    CHECK(all.find("the worst") == std::string::npos);  // no number to measure
    // one NaN among numbers that are off: both said, the worst number measured
    Array some = want * 2.f;
    some(1, 2) = nan;
    const std::string mixed = grading::diagnose("dx", some, want, 1e-6);
    CHECK(mixed.find("6 of 6 elements off, 1 of them NaN (the first at (1,2)), the worst number at (1,1) (off by 3") !=
          std::string::npos);
    // an infinity (a division by 0) likewise, and NaN and ±inf together counted apart
    const float inf = std::numeric_limits<float>::infinity();
    const std::string infs = grading::diagnose("dx", Array(want * inf), want, 1e-6);
    CHECK(infs.find("6 of 6 elements off, 6 of them ±inf (the first at (0,0))") != std::string::npos);
    Array both = want * inf;
    both(0, 1) = nan;
    CHECK(grading::diagnose("dx", both, want, 1e-6).find("6 of them not finite: 1 NaN, 5 ±inf") != std::string::npos);
}

TEST_CASE("diagnose_scalar says NaN or inf where the answer is one, never 'off by nan'") {
    const std::string msg = grading::diagnose_scalar("dL/da", std::nan(""), 2.0, 1e-6);
    CHECK(msg.find("dL/da: got NaN where a number was expected; a NaN or an infinity comes from") == 0);
    CHECK(msg.find("off by") == std::string::npos);
    CHECK(grading::diagnose_scalar("dL/da", -std::numeric_limits<double>::infinity(), 2.0, 1e-6).find("got -inf") !=
          std::string::npos);
    CHECK(grading::diagnose_scalar("dL/da", 2.0, 2.0, 1e-6).empty());
}

TEST_CASE("input_changed says where the learner's code wrote into its input; threw names the case") {
    const Array before = {{0.5f, -1.f}, {2.f, 3.f}};
    Array after = before;
    CHECK(grading::input_changed("f(x)", before, after).empty());
    after(1, 0) = 7.f;
    CHECK(grading::input_changed("f(x)", before, after) ==
          "f(x) wrote into its input: at (1,0) it was 2 and became 7; an op leaves its input as it was and computes "
          "into a new Array");
    // xtensor's broadcast error, on one line, with what it usually means
    try {
        const Array wide = xt::zeros<float>({2, 7});
        (void)Array(wide - xt::sum(wide, {1}));
        FAIL("xtensor broadcast (2,7) against (2)");
    } catch (const std::exception& e) {
        const std::string m = grading::threw("case 1", e);
        CHECK_MESSAGE(m.find("your code threw on case 1: ") == 0, m);
        CHECK_MESSAGE(m.find("Incompatible dimension of arrays") != std::string::npos, m);  // its wording varies by build
        CHECK(m.find('\n') == std::string::npos);
        CHECK(m.find("reshape it to (rows, 1), or index it row by row") != std::string::npos);
    }
    CHECK(grading::threw("case 2", std::runtime_error("oops")) == "your code threw on case 2: oops");
}

TEST_SUITE_END();
