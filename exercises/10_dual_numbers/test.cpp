// Exercise 10's grader: each rule against finite differences on 20 seeded points, then the
// network's jvp against xtgrad's func::jvp and finite differences on inputs of several shapes.
// Each test stops at the first wrong rule or shape, names the point and the likely cause; the
// network waits for the rules.
#include "exercise.hpp"
#include "diagnose.hpp"

#include <xtgrad/autograd/func.hpp>

#include <algorithm>
#include <cmath>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <vector>

using namespace xtgrad;
using ex10::Dual;

TEST_SUITE_BEGIN("10_dual_numbers");

namespace {

struct Point {
    double a, da, b, db;
};
using Fn2 = std::function<double(double, double)>;                 // f(a, b)
using Tangent = std::function<double(const Point&)>;               // a wrong rule's tangent
struct Rule {
    const char* name;
    bool binary;
    std::function<Dual(Dual, Dual)> dual;  // yours
    Fn2 f;                                 // the value, from <cmath>
    double a_lo, a_hi, b_lo, b_hi;         // where the points are drawn (b's sign is random)
    std::vector<std::pair<const char*, Tangent>> likely;  // wrong rules, by their cause
};

const std::vector<Rule>& rules() {
    using std::cos, std::exp, std::tanh;
    static const std::vector<Rule> r = {
        {"a * b", true, [](Dual a, Dual b) { return a * b; }, [](double a, double b) { return a * b; }, -3, 3, 0.5, 3,
         {{"only a's term: the product rule has two, one per factor", [](const Point& p) { return p.da * p.b; }},
          {"only b's term: the product rule has two, one per factor", [](const Point& p) { return p.a * p.db; }},
          {"a.tangent · b.tangent: that is the ε² term, which is 0", [](const Point& p) { return p.da * p.db; }},
          {"the two terms are subtracted: in a product both add (the quotient rule is the one with a minus)",
           [](const Point& p) { return p.da * p.b - p.a * p.db; }},
          {"the two terms are subtracted: in a product both add (the quotient rule is the one with a minus)",
           [](const Point& p) { return p.a * p.db - p.da * p.b; }}}},
        {"a / b", true, [](Dual a, Dual b) { return a / b; }, [](double a, double b) { return a / b; }, -3, 3, 0.5, 3,
         {{"the two terms are added: in a quotient b's term is subtracted",
           [](const Point& p) { return (p.da * p.b + p.a * p.db) / (p.b * p.b); }},
          {"divided by b, not by b²", [](const Point& p) { return (p.da * p.b - p.a * p.db) / p.b; }},
          {"only a's term: b moves too", [](const Point& p) { return p.da / p.b; }}}},
        {"exp(a)", false, [](Dual a, Dual) { return ex10::exp(a); }, [](double a, double) { return exp(a); }, -3, 3, 0, 0,
         {{"the chain rule's factor a.tangent is missing", [](const Point& p) { return exp(p.a); }}}},
        {"log(a)", false, [](Dual a, Dual) { return ex10::log(a); }, [](double a, double) { return std::log(a); }, 0.2, 5, 0, 0,
         {{"the chain rule's factor a.tangent is missing", [](const Point& p) { return 1 / p.a; }},
          {"multiplied by a: log's derivative is 1/a", [](const Point& p) { return p.da * p.a; }}}},
        {"sin(a)", false, [](Dual a, Dual) { return ex10::sin(a); }, [](double a, double) { return std::sin(a); }, -4, 4, 0, 0,
         {{"the chain rule's factor a.tangent is missing", [](const Point& p) { return cos(p.a); }},
          {"−cos(a): sin' is +cos (cos' is the one with the minus)", [](const Point& p) { return -cos(p.a) * p.da; }}}},
        {"tanh(a)", false, [](Dual a, Dual) { return ex10::tanh(a); }, [](double a, double) { return tanh(a); }, -3, 3, 0, 0,
         {{"the chain rule's factor a.tangent is missing", [](const Point& p) { return 1 - tanh(p.a) * tanh(p.a); }},
          {"1 − tanh(a), not 1 − tanh(a)²", [](const Point& p) { return (1 - tanh(p.a)) * p.da; }},
          {"1 − a², with a the input: tanh' is 1 − tanh(a)²", [](const Point& p) { return (1 - p.a * p.a) * p.da; }},
          {"1 + tanh(a)²: tanh' is 1 − tanh(a)² (a sign inside)", [](const Point& p) { return (1 + tanh(p.a) * tanh(p.a)) * p.da; }},
          {"1/cosh(a): tanh' is sech² = 1/cosh(a)², the square is missing", [](const Point& p) { return p.da / std::cosh(p.a); }}}},
    };
    return r;
}

std::vector<Point> points(std::size_t rule) {
    const Rule& r = rules()[rule];
    Generator gen(1000 + rule);
    std::vector<Point> ps(20);
    for (Point& p : ps) {
        p.a = gen.uniform(static_cast<float>(r.a_lo), static_cast<float>(r.a_hi));
        p.da = gen.uniform(-2.f, 2.f);  // never 1: a rule that forgets the chain rule's factor is caught
        p.b = gen.uniform(static_cast<float>(r.b_lo), static_cast<float>(r.b_hi)) * (gen.uniform() < 0.5f ? -1 : 1);
        p.db = r.binary ? gen.uniform(-2.f, 2.f) : 0;
    }
    return ps;
}

// The directional derivative of f at (a, b) along (da, db), by central differences in double.
double numeric(const Fn2& f, const Point& p) {
    const double h = 1e-6;
    return (f(p.a + h * p.da, p.b + h * p.db) - f(p.a - h * p.da, p.b - h * p.db)) / (2 * h);
}

bool close(double got, double want, double tol) { return std::abs(got - want) <= tol * (1 + std::abs(want)); }

std::string point_str(const Rule& r, const Point& p) {
    return r.binary ? fmt::format("a = {:.4g} {:+.4g}ε, b = {:.4g} {:+.4g}ε", p.a, p.da, p.b, p.db)
                    : fmt::format("a = {:.4g} {:+.4g}ε", p.a, p.da);
}

// "" when rule i is right at all its points; else the first wrong point, how far off, and the likely cause.
std::string check_rule(std::size_t i) {
    const Rule& r = rules()[i];
    const std::vector<Point> ps = points(i);
    const std::size_t n = ps.size();
    std::vector<double> got(n), want(n);
    for (std::size_t k = 0; k < n; ++k) {
        const Point& p = ps[k];
        Dual y{};
        std::optional<std::string> threw;  // a throw: named with the rule, the point and the exception's text
        try {
            y = r.dual({p.a, p.da}, {p.b, p.db});
        } catch (const std::exception& e) {
            threw = e.what();
        } catch (...) {
            threw = "an exception that is not a std::exception";
        }
        if (threw)
            return fmt::format("{} threw at point {} of {} ({}): {}", r.name, k + 1, n, point_str(r, p), *threw);
        // the values are given (exercise.cpp), so their numbers are no answer: shown at once
        const double v = r.f(p.a, p.b);
        if (!close(y.value, v, 1e-12))
            return std::isnan(y.value)
                       ? fmt::format("{}: the value is NaN at point {} of {} ({}), expected {:.8g}: the given value was changed?",
                                     r.name, k + 1, n, point_str(r, p), v)
                       : fmt::format("{}: the value is off at point {} of {} ({}): expected {:.8g}, got {:.8g} (off by {:.3g}); "
                                     "the value is the op's own, as given: only the tangent is yours",
                                     r.name, k + 1, n, point_str(r, p), v, y.value, std::abs(y.value - v));
        got[k] = y.tangent, want[k] = numeric(r.f, p);
    }
    const auto wrong = [&](std::size_t k) { return !close(got[k], want[k], 1e-6); };
    std::size_t first = n, off = 0, nans = 0;
    for (std::size_t k = 0; k < n; ++k) {
        if (wrong(k) && first == n) first = k;
        off += wrong(k), nans += std::isnan(got[k]);
    }
    if (first == n) return "";
    const auto all = [&](const std::function<double(std::size_t)>& h) {
        for (std::size_t k = 0; k < n; ++k)
            if (!close(got[k], h(k), 1e-9)) return false;
        return true;
    };
    std::string cause;
    if (nans > 0)
        cause = fmt::format("the tangent is NaN at {} of them: a 0/0, a log or square root of a negative, or NaN "
                            "written in place of the rule?", nans);
    if (cause.empty() && all([](std::size_t) { return 0.0; })) cause = "every tangent is 0: is the TODO still there?";
    for (const auto& [why, wrong_rule] : r.likely)
        if (cause.empty() && all([&, &w = wrong_rule](std::size_t k) { return w(ps[k]); })) cause = why;
    if (cause.empty() && all([&](std::size_t k) { return -want[k]; })) cause = "the opposite sign everywhere: a sign?";
    if (cause.empty()) {  // within 1 % everywhere: close, but not the derivative itself
        double worst = 0;
        for (std::size_t k = 0; k < n; ++k) worst = std::max(worst, std::abs(got[k] - want[k]) / (1e-12 + std::abs(want[k])));
        if (worst < 1e-2)
            cause = fmt::format("within {:.2g} % of the expected tangents everywhere: an approximation (a finite "
                                "difference, or float in place of double?), not the rule", 100 * worst);
    }
    const double g = got[first], err = std::abs(g - want[first]);
    // got 0: "off by" would be the answer itself
    const std::string amount = std::isnan(g)             ? "got NaN"
                               : g == 0 && !grading::reveal() ? "got 0"
                                                              : fmt::format("got {:.6g}, off by {:.3g}", g, err);
    std::string msg = fmt::format("{}: the tangent is off at {} of {} points, the first at point {} ({}): {} (tolerance "
                                  "1e-06 × (1 + |expected|))",
                                  r.name, off, n, first + 1, point_str(r, ps[first]), amount);
    if (!cause.empty()) msg += "; " + cause;
    msg += grading::reveal() ? fmt::format(" [there: expected {:.8g}, got {:.8g}]", want[first], g)
                             : " (XTGRAD_REVEAL=1 shows the expected values)";
    return msg;
}

std::string rules_all() {
    for (std::size_t i = 0; i < rules().size(); ++i)
        if (std::string m = check_rule(i); !m.empty()) return m;
    return "";
}

// The network on xtgrad's tensors: the same function as ex10::network.
Tensor network_tensor(const Tensor& w, const Tensor& b, const Tensor& x) {
    const Tensor h = tanh(add(matmul(w, x), b));
    return div(log(add(exp(h), 1.f)), add(mul(h, h), 1.f));
}

std::string check_network() {
    const std::vector<std::pair<std::size_t, std::size_t>> shapes = {{3, 5}, {6, 2}, {4, 4}, {1, 7}, {8, 1}};
    for (std::size_t s = 0; s < shapes.size(); ++s) {
        const auto [n, m] = shapes[s];
        Generator gen(2000 + s);
        const Tensor w = randn({m, n}, gen), b = randn({m}, gen), x = randn({n}, gen), v = randn({n}, gen);
        const std::vector<double> wd(w.ptr(), w.ptr() + w.numel()), bd(b.ptr(), b.ptr() + b.numel());
        std::vector<Dual> xd(n);
        for (std::size_t j = 0; j < n; ++j) xd[j] = {x.ptr()[j], v.ptr()[j]};
        const std::string where = fmt::format(", W of shape ({},{}), seed {}", m, n, 2000 + s);
        // the rules passed on their points; one may still throw or give NaN elsewhere
        std::vector<Dual> y, yp, ym;
        const double h = 1e-6;
        std::vector<Dual> plus(n), minus(n);
        for (std::size_t j = 0; j < n; ++j) plus[j] = {xd[j].value + h * xd[j].tangent, 0}, minus[j] = {xd[j].value - h * xd[j].tangent, 0};
        try {
            y = ex10::network(wd, bd, xd), yp = ex10::network(wd, bd, plus), ym = ex10::network(wd, bd, minus);
        } catch (const std::exception& e) {
            return fmt::format("the network threw{}: {}", where, e.what());
        }
        for (std::size_t i = 0; i < m; ++i)
            if (std::isnan(y[i].tangent) || std::isnan(y[i].value))
                return fmt::format("the network's output {} is NaN in its {}{}, though every rule passed its points",
                                   i + 1, std::isnan(y[i].value) ? "value" : "tangent", where);
        // references: func::jvp (xtgrad's forward mode, dual tensors) and central differences
        const Tensor jv = func::jvp([&](const std::vector<Tensor>& in) { return network_tensor(w, b, in[0]); }, {x}, {v}).second;
        Array mine = xt::zeros<float>({m}), fd = xt::zeros<float>({m});
        for (std::size_t i = 0; i < m; ++i)
            mine(i) = static_cast<float>(y[i].tangent), fd(i) = static_cast<float>((yp[i].value - ym[i].value) / (2 * h));
        if (std::string d = grading::diagnose("the network's tangents against func::jvp" + where, mine, jv.data(), 1e-4); !d.empty()) return d;
        if (std::string d = grading::diagnose("the network's tangents against finite differences" + where, mine, fd, 1e-4); !d.empty()) return d;
    }
    return "";
}

}  // namespace

TEST_CASE("10_dual_numbers: each rule's value and tangent, on 20 points each") { GRADE(rules_all()); }

TEST_CASE("10_dual_numbers: a network's jvp, against func::jvp and finite differences, on 5 shapes") {
    GRADE(rules_all().empty() ? check_network() : "not graded until every rule is right (above)");
}

TEST_SUITE_END();
