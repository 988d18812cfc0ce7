// How the graders of lessons 9 and on say what is wrong without giving the answer: the value, the
// case and the element, and the likely cause; the expected values only when asked for
// (XTGRAD_REVEAL=1, after a try of one's own). grading.hpp's GRADE_* print them at once.
#pragma once

#include "grading.hpp"

#include <cstdlib>

namespace grading {

inline bool reveal() {
    const char* e = std::getenv("XTGRAD_REVEAL");
    return e != nullptr && std::string(e) == "1";
}

// What `got` would be if `cause` were the bug: diagnose() names the first one got matches.
struct Hypothesis {
    std::string cause;
    xtgrad::Array value;
};

// "" when got is within tol of want. Otherwise: how many elements are off, where the worst is,
// and the likely cause: all zeros (the TODO), a hypothesis that got matches, or one ratio
// got/want everywhere (-1: a sign; else a factor).
inline std::string diagnose(const std::string& what, const xtgrad::Array& got, const xtgrad::Array& want, double tol,
                            const std::vector<Hypothesis>& likely = {}) {
    const std::vector<std::size_t> gs(got.shape().begin(), got.shape().end());
    const std::vector<std::size_t> ws(want.shape().begin(), want.shape().end());
    if (gs != ws) return fmt::format("{}: shape {} where {} was expected", what, xtgrad::shape_str(gs), xtgrad::shape_str(ws));
    const auto within = [&](const xtgrad::Array& a) {
        for (std::size_t i = 0; i < a.size(); ++i)
            if (!(std::abs(static_cast<double>(got.data()[i]) - a.data()[i]) <= tol)) return false;
        return true;
    };
    if (within(want)) return "";
    std::size_t off = 0, worst = 0;
    double worst_err = -1;
    bool all_zero = true;
    double ratio_lo = std::numeric_limits<double>::infinity(), ratio_hi = -ratio_lo;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const double g = got.data()[i], w = want.data()[i];
        double err = std::abs(g - w);
        if (std::isnan(err)) err = std::numeric_limits<double>::infinity();
        off += err > tol;
        if (err > worst_err) worst_err = err, worst = i;
        all_zero = all_zero && g == 0;
        if (std::abs(w) > 100 * tol) ratio_lo = std::min(ratio_lo, g / w), ratio_hi = std::max(ratio_hi, g / w);
    }
    std::string cause;
    if (all_zero) cause = "every element is 0: is the TODO still there?";
    for (const Hypothesis& h : likely)
        if (cause.empty() && h.value.shape() == got.shape() && within(h.value)) cause = h.cause;
    const double r = (ratio_lo + ratio_hi) / 2;
    if (cause.empty() && std::isfinite(r) && ratio_hi - ratio_lo <= 1e-3 * std::abs(r) + 1e-6)
        cause = std::abs(r + 1) < 1e-3 ? "the opposite sign everywhere: a sign?"
                                       : fmt::format("off by a factor of {:.4g} everywhere: a missing or extra factor?", r);
    std::string msg = fmt::format("{}: {} of {} elements off, the worst at {} (off by {:.3g}, tolerance {:g})", what, off,
                                  got.size(), index_str(worst, gs), worst_err, tol);
    if (!cause.empty()) msg += "; " + cause;
    if (reveal())
        msg += fmt::format(" [there: expected {:.6g}, got {:.6g}]", want.data()[worst], got.data()[worst]);
    else
        msg += " (XTGRAD_REVEAL=1 shows the expected values)";
    return msg;
}

}  // namespace grading

// A grader's verdict: msg alone when it is not empty (no doctest expression around it), one
// passed assertion when it is.
#define GRADE(msg)                                                        \
    do {                                                                  \
        const std::string grade_verdict_ = (msg);                         \
        if (grade_verdict_.empty())                                       \
            CHECK(grade_verdict_.empty());                                \
        else                                                              \
            FAIL_CHECK(grade_verdict_);                                   \
    } while (0)
