// How the exercises' tests say what is wrong: not "CHECK failed" but which value, which
// element, what was expected and how far off it is.
//
//   GRADE_CLOSE("d loss / d x", got, want, 1e-4);   // arrays of the same shape
//   GRADE_SCALAR("dL/da", got, want, 1e-5);
//   GRADE_GRADCHECK(gradcheck(f, {x}));
//
// A failure reads, for example (exercise 01 as shipped):
//   d loss / d x: 6 of 6 elements off; worst at (1,0): expected 0.75, got 0 (off by 0.75,
//   tolerance 1e-06); every element is 0: is the TODO still there?
#pragma once

#include <xtgrad/xtgrad.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

namespace grading {

// Row-major index of a flat position, as "(i,j)".
inline std::string index_str(std::size_t flat, const std::vector<std::size_t>& shape) {
    std::vector<std::size_t> idx(shape.size());
    for (std::size_t d = shape.size(); d-- > 0;) {
        idx[d] = shape[d] ? flat % shape[d] : 0;
        flat = shape[d] ? flat / shape[d] : 0;
    }
    return xtgrad::shape_str(idx);
}

// "" when every element of got is within tol of want; otherwise one sentence about the worst.
inline std::string mismatch(const std::string& what, const xtgrad::Array& got, const xtgrad::Array& want,
                            double tol) {
    const std::vector<std::size_t> gs(got.shape().begin(), got.shape().end());
    const std::vector<std::size_t> ws(want.shape().begin(), want.shape().end());
    if (gs != ws)
        return fmt::format("{}: shape {} where {} was expected", what, xtgrad::shape_str(gs), xtgrad::shape_str(ws));
    std::size_t off = 0, worst = 0;
    double worst_err = -1;
    bool all_zero = true;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const double g = got.data()[i], w = want.data()[i];
        double err = std::abs(g - w);
        if (std::isnan(err)) err = std::numeric_limits<double>::infinity();
        if (err > tol) ++off;
        if (err > worst_err) worst_err = err, worst = i;
        all_zero = all_zero && g == 0;
    }
    if (off == 0) return "";
    return fmt::format("{}: {} of {} elements off; worst at {}: expected {:.6g}, got {:.6g} (off by {:.3g}, "
                       "tolerance {:g}){}",
                       what, off, got.size(), index_str(worst, gs), want.data()[worst], got.data()[worst],
                       worst_err, tol, all_zero ? "; every element is 0: is the TODO still there?" : "");
}

inline std::string mismatch(const std::string& what, double got, double want, double tol) {
    const double err = std::abs(got - want);
    if (err <= tol) return "";
    return fmt::format("{}: expected {:.6g}, got {:.6g} (off by {:.3g}, tolerance {:g})", what, want, got, err, tol);
}

// What the grader is checking now ("graph 'chain', seed 2"), for the runner's messages when the
// learner's code never returns or crashes (exercises/main.cpp); set before calling into it.
// Under a lock: the runner's watchdog reads it from its own thread.
inline std::mutex& context_mutex() {
    static std::mutex m;
    return m;
}
inline std::string& context_text() {
    static std::string text;
    return text;
}
inline void set_context(const std::string& what) {
    const std::lock_guard<std::mutex> lock(context_mutex());
    context_text() = what;
}
// wait = false: "" where another thread holds the lock (the runner's crash report, which runs
// in a signal handler and must not wait on a lock the crashed code may hold)
inline std::string context(bool wait = true) {
    std::unique_lock<std::mutex> lock(context_mutex(), std::defer_lock);
    if (wait) lock.lock();
    else if (!lock.try_lock()) return "";
    return context_text();
}

// A tensor's gradient, or zeros of its shape if backward left none (a backward that wrote nothing).
inline xtgrad::Array grad_or_zeros(const xtgrad::Tensor& t) {
    return t.has_grad() ? t.grad_array() : xtgrad::Array(xt::zeros<float>(t.shape()));
}

}  // namespace grading

// The message alone when it is not empty (no doctest expression around it); one passed
// assertion when it is.
#define GRADE_CLOSE(what, got, want, tol)                                       \
    do {                                                                        \
        const std::string grade_msg_ = grading::mismatch(what, got, want, tol); \
        if (grade_msg_.empty())                                                 \
            CHECK(grade_msg_.empty());                                          \
        else                                                                    \
            FAIL_CHECK(grade_msg_);                                             \
    } while (0)

#define GRADE_SCALAR(what, got, want, tol) GRADE_CLOSE(what, static_cast<double>(got), static_cast<double>(want), tol)

#define GRADE_GRADCHECK(result)                                          \
    do {                                                                 \
        const xtgrad::GradcheckResult grade_r_ = (result);               \
        if (grade_r_.passed)                                             \
            CHECK(grade_r_.passed);                                      \
        else                                                             \
            FAIL_CHECK(grade_r_.message());                              \
    } while (0)
