// How the graders of lessons 9 and on say what is wrong without giving the answer: the value, the
// case and the element, and the likely cause; the expected values only when asked for
// (XTGRAD_REVEAL=1, after a try of one's own). grading.hpp's GRADE_* print them at once.
#pragma once

#include "grading.hpp"

#include <algorithm>
#include <cstdlib>
#include <set>

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

// Where a NaN or an infinity comes from, for the messages below.
inline std::string non_finite_cause() {
    return "a NaN or an infinity comes from 0/0, x/0, ∞ − ∞, 0·∞, exp of a large number, or the log or square root "
           "of a negative number: where can your formula make one?";
}

// "" when got is within tol of want. Otherwise: how many elements are off, where the worst is,
// and the likely cause: all zeros (the TODO), a hypothesis that got matches, or one ratio
// got/want everywhere (-1: a sign; within 1 % of 1: an approximation; else a factor).
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
    // NaN and ±inf (where a number was expected) are counted apart: "off by inf" said nothing of them
    std::size_t off = 0, worst = 0, nans = 0, infs = 0, first_bad = 0;
    double worst_err = -1;  // over the elements that are numbers
    bool all_zero = true;
    double ratio_lo = std::numeric_limits<double>::infinity(), ratio_hi = -ratio_lo;
    std::size_t ratios = 0;  // elements whose expected value is far enough from 0 to divide by
    for (std::size_t i = 0; i < got.size(); ++i) {
        const double g = got.data()[i], w = want.data()[i];
        if (!std::isfinite(g) && std::isfinite(w)) {
            if (nans + infs == 0) first_bad = i;
            ++(std::isnan(g) ? nans : infs);
            ++off;
            all_zero = false;
            continue;
        }
        const double err = std::abs(g - w);
        off += err > tol;
        if (err > worst_err) worst_err = err, worst = i;
        all_zero = all_zero && g == 0;
        if (std::abs(w) > 100 * tol) ratio_lo = std::min(ratio_lo, g / w), ratio_hi = std::max(ratio_hi, g / w), ++ratios;
    }
    std::string cause;
    if (nans + infs > 0) cause = non_finite_cause();
    if (all_zero) cause = "every element is 0: is the TODO still there?";
    for (const Hypothesis& h : likely)
        if (cause.empty() && h.value.shape() == got.shape() && within(h.value)) cause = h.cause;
    const double r = (ratio_lo + ratio_hi) / 2;
    // "everywhere" only where every element was compared; a ratio within 1 % of 1 is no factor
    // but an approximation (a finite difference in place of the formula)
    const char* where = ratios == got.size() ? "everywhere" : "on every element not 0";
    if (cause.empty() && std::isfinite(r) && std::abs(r - 1) < 1e-2)
        cause = fmt::format("within {:.2g} % of the expected values {}: an approximation (a numerical gradient?), not "
                            "the formula", 100 * std::max(std::abs(ratio_lo - 1), std::abs(ratio_hi - 1)), where);
    // one ratio within 0.1 % of itself: relative alone, so values near 0 (a 1e-10 of noise) are no "scale"
    else if (cause.empty() && std::isfinite(r) && r != 0 && ratio_hi - ratio_lo <= 1e-3 * std::abs(r))
        cause = std::abs(r + 1) < 1e-3
                    ? fmt::format("the opposite sign {}: a sign?", where)
                    : fmt::format("off by ×{:.4g} {}: a scale, or a missing or extra factor?", r, where);
    std::string msg = fmt::format("{}: {} of {} elements off", what, off, got.size());
    if (nans + infs > 0)
        msg += fmt::format(", {} of them {} (the first at {})", nans + infs,
                           infs == 0 ? "NaN" : nans == 0 ? "±inf" : fmt::format("not finite: {} NaN, {} ±inf", nans, infs),
                           index_str(first_bad, gs));
    if (worst_err > tol)
        msg += fmt::format(", the worst {}at {} (off by {:.3g}, tolerance {:g})", nans + infs > 0 ? "number " : "",
                           index_str(worst, gs), worst_err, tol);
    if (!cause.empty()) msg += "; " + cause;
    const std::size_t shown = worst_err > tol ? worst : first_bad;
    if (reveal())
        msg += fmt::format(" [there: expected {:.6g}, got {:.6g}]", want.data()[shown], got.data()[shown]);
    else
        msg += " (XTGRAD_REVEAL=1 shows the expected values)";
    return msg;
}

// One number, in the same words: "" when got is within tol of want; otherwise how far off, and
// the likely cause (the first hypothesis got matches, else 0 or the opposite sign, else otherwise).
struct ScalarHypothesis {
    std::string cause;
    double value;
};
inline std::string diagnose_scalar(const std::string& what, double got, double want, double tol,
                                   const std::vector<ScalarHypothesis>& likely = {}, const std::string& otherwise = "") {
    const auto near = [&](double v) { return std::abs(got - v) <= tol; };
    if (near(want)) return "";
    if (!std::isfinite(got) && std::isfinite(want))  // "off by nan" said nothing
        return fmt::format("{}: got {} where a number was expected; {}", what, std::isnan(got) ? "NaN" : got > 0 ? "+inf" : "-inf",
                           non_finite_cause()) +
               (reveal() ? fmt::format(" [expected {:.9g}]", want) : std::string(" (XTGRAD_REVEAL=1 shows the expected value)"));
    std::string cause;
    for (const ScalarHypothesis& h : likely)
        if (cause.empty() && near(h.value)) cause = h.cause;
    if (cause.empty() && got == 0) cause = "it is 0: is the TODO still there?";
    if (cause.empty() && std::abs(want) > 100 * tol && std::abs(got + want) <= tol) cause = "the opposite sign: a sign?";
    if (cause.empty()) cause = otherwise;
    // got = 0: "off by" would be the answer itself
    std::string msg = got == 0 && !reveal() ? what + ": wrong"
                                            : fmt::format("{}: off by {:.3g} (tolerance {:g})", what, std::abs(got - want), tol);
    if (!cause.empty()) msg += "; " + cause;
    return msg + (reveal() ? fmt::format(" [expected {:.9g}, got {:.9g}]", want, got)
                           : std::string(" (XTGRAD_REVEAL=1 shows the expected value)"));
}

// "" when the learner's call left its input as it was; else where it changed. An op that writes
// into its input corrupts the caller's tensor, and every check computed from it afterwards.
inline std::string input_changed(const std::string& what, const xtgrad::Array& before, const xtgrad::Array& after) {
    const std::vector<std::size_t> shape(before.shape().begin(), before.shape().end());
    for (std::size_t i = 0; i < before.size() && i < after.size(); ++i) {
        const float b = before.data()[i], a = after.data()[i];
        if (b != a && !(std::isnan(b) && std::isnan(a)))
            return fmt::format("{} wrote into its input: at {} it was {:.6g} and became {:.6g}; an op leaves its input "
                               "as it was and computes into a new Array",
                               what, index_str(i, shape), b, a);
    }
    return "";
}

// What the learner's code threw, on which case; xtensor's broadcast error gets what it usually means.
inline std::string threw(const std::string& where, const std::exception& e) {
    std::string msg = fmt::format("your code threw on {}: {}", where, e.what());
    std::replace(msg.begin(), msg.end(), '\n', ' ');  // xtensor's shapes come on lines of their own
    if (msg.find("Incompatible dimension") != std::string::npos)
        msg += " (xtensor could not broadcast two shapes: a per-row quantity of shape (rows) lines up with the last "
               "axis, not with the rows; reshape it to (rows, 1), or index it row by row)";
    return msg;
}

// randn of a shape times scale, from a seed the messages print: the graders' random inputs.
inline xtgrad::Tensor random_tensor(const xtgrad::Shape& shape, std::uint64_t seed, float scale = 1.f) {
    xtgrad::Generator gen(seed);
    xtgrad::Tensor t = xtgrad::randn(shape, gen);
    t.mutable_data() *= scale;
    return t;
}

// Every op name in t's graph (the nodes reached from t.grad_fn()).
inline std::set<std::string> ops_in_graph(const xtgrad::Tensor& t) {
    std::set<std::string> ops;
    std::set<const xtgrad::Node*> seen;
    std::vector<const xtgrad::Node*> todo;
    if (t.grad_fn()) todo.push_back(t.grad_fn().get());
    while (!todo.empty()) {
        const xtgrad::Node* n = todo.back();
        todo.pop_back();
        if (!seen.insert(n).second) continue;
        ops.insert(n->op());
        for (const xtgrad::ImplPtr& in : n->inputs())
            if (in && in->grad_fn) todo.push_back(in->grad_fn.get());
    }
    return ops;
}

// The backward nodes that ran while f did (xtgrad's trace), by op, in the order they ran: a
// "write the backward" grader checks that the learner's node ran and no library node of the op.
template <class F>
std::vector<std::string> nodes_run(F&& f) {
    xtgrad::TraceTable table;
    f();
    std::vector<std::string> ops;
    for (const xtgrad::TraceTable::Row& r : table.rows()) ops.push_back(r.op);
    return ops;
}

// "" when only `mine` ran; else which other node ran inside the learner's backward.
inline std::string only_yours_ran(const std::vector<std::string>& ran, const std::string& mine) {
    if (std::find(ran.begin(), ran.end(), mine) == ran.end()) return fmt::format("your node {} did not run", mine);
    for (const std::string& op : ran)
        if (op != mine)
            return fmt::format("backward ran xtgrad's {} besides your {}: the exercise is to write the backward, not to "
                               "run the library's",
                               op, mine);
    return "";
}

// The first non-empty message of a sequence of checks: graders stop at the first mismatch.
template <class Range, class Check>
std::string first_failure(const Range& cases, Check&& check) {
    for (const auto& c : cases)
        if (std::string m = check(c); !m.empty()) return m;
    return "";
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
