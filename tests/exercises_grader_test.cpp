// The exercises' grader (exercises/diagnose.hpp): the cause it names for a wrong answer must be
// the one the values show, never a guess the numbers do not support.
#include "exercises/diagnose.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
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

TEST_SUITE_END();
