// The exercises' grader (exercises/diagnose.hpp): the cause it names for a wrong answer must be
// the one the values show, never a guess the numbers do not support.
#include "exercises/diagnose.hpp"

#include <doctest/doctest.h>

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

TEST_SUITE_END();
