// Exercise 09's grader: your softmax backward in ops against xtgrad's softmax, to first and second
// order, on seeded random inputs of many shapes. Each test stops at the first case that fails and
// says what is wrong, where, and the likely cause; later tests wait for the earlier ones.
#include "exercise.hpp"
#include "diagnose.hpp"

#include <functional>
#include <string>

using namespace xtgrad;

TEST_SUITE_BEGIN("09_softmax_double_backward");

namespace {

// One graded input: x of shape (rows, cols), values randn * scale; a constant first row if asked.
struct Case {
    std::size_t rows, cols;
    float scale;
    bool constant_row;
    std::uint64_t seed;
};
// non-square, square (a sum over the wrong axis still has the right shape), one row, two columns,
// a constant row, large scores (y nearly one-hot)
const std::vector<Case> cases = {{2, 5, 1, false, 901}, {4, 3, 1, false, 902}, {3, 3, 2, false, 903}, {1, 7, 1, false, 904},
                                 {5, 2, 3, false, 905}, {3, 4, 1, true, 906},  {2, 6, 8, false, 907}, {4, 4, 0.5f, true, 908}};

std::string where(std::size_t i) {
    const Case& c = cases[i];
    return fmt::format("case {} of {} (x of shape ({},{}), seed {}{})", i + 1, cases.size(), c.rows, c.cols, c.seed,
                       c.constant_row ? ", a constant first row" : "");
}

Tensor random(const Case& c, std::uint64_t salt, float scale = 1.f) {
    Generator gen(c.seed * 10 + salt);
    Tensor t = randn({c.rows, c.cols}, gen);
    t.mutable_data() *= scale;
    return t;
}
Tensor make_x(const Case& c) {
    Tensor x = random(c, 0, c.scale);
    if (c.constant_row)
        for (std::size_t k = 0; k < c.cols; ++k) x.mutable_data()(0, k) = 0.7f;
    return x;
}

// The first order: your function called on softmax_rows's node, against xtgrad's kernel. "" if right.
std::string first_order(std::size_t i) {
    const Case& c = cases[i];
    const Tensor x = make_x(c).requires_grad_(true), g = random(c, 1);
    const Tensor y = ex09::softmax_rows(x);
    Grads out;
    try {
        out = ex09::softmax_backward_in_ops(*y.grad_fn(), g);
    } catch (const std::exception& e) {
        const std::string what = e.what();
        return fmt::format("softmax_backward_in_ops threw, {}: {}{}", where(i), what,
                           what.find("broadcast") != std::string::npos ? "; a sum without keepdim?" : "");
    }
    if (out.size() != 1) return fmt::format("softmax_backward_in_ops returned {} tensors; x is the node's one input: return {{dx}}", out.size());
    if (!out[0].defined()) return "softmax_backward_in_ops returned an undefined tensor for x: is the TODO still there?";
    Tensor ref = x.detach().requires_grad_(true);
    softmax(ref, -1).backward(g.data());
    // The forms a wrong backward takes, to name the cause: row, column and total sums of g ⊙ y.
    const Array& ya = y.data();
    const Array& ga = g.data();
    std::vector<double> row(c.rows, 0.0), col(c.cols, 0.0);
    double total = 0;
    for (std::size_t r = 0; r < c.rows; ++r)
        for (std::size_t k = 0; k < c.cols; ++k) {
            const double gy = static_cast<double>(ga(r, k)) * ya(r, k);
            row[r] += gy, col[k] += gy, total += gy;
        }
    const auto form = [&](const std::function<double(std::size_t, std::size_t)>& f) {
        Array h = ga;
        for (std::size_t r = 0; r < c.rows; ++r)
            for (std::size_t k = 0; k < c.cols; ++k) h(r, k) = static_cast<float>(f(r, k));
        return h;
    };
    std::vector<grading::Hypothesis> likely = {
        {"it is y ⊙ g: the −⟨g, y⟩ term is missing", form([&](auto r, auto k) { return ya(r, k) * ga(r, k); })},
        {"it is g − ⟨g, y⟩: the factor y is missing", form([&](auto r, auto k) { return ga(r, k) - row[r]; })},
        {"⟨g, y⟩ is summed over each column (dim 0), not each row",
         form([&](auto r, auto k) { return ya(r, k) * (ga(r, k) - col[k]); })},
        {"⟨g, y⟩ is summed over the whole tensor, not each row",
         form([&](auto r, auto k) { return ya(r, k) * (ga(r, k) - total); })},
    };
    if (c.rows == c.cols)  // (rows) against (rows, cols) broadcasts along the columns, silently when square
        likely.push_back({"the row sums are subtracted along the wrong axis: a sum without keepdim?",
                          form([&](auto r, auto k) { return ya(r, k) * (ga(r, k) - row[k]); })});
    return grading::diagnose("dx (first order), " + where(i), out[0].data(), ref.grad_array(), 1e-5, likely);
}

std::string first_order_all() {
    for (std::size_t i = 0; i < cases.size(); ++i)
        if (std::string m = first_order(i); !m.empty()) return m;
    return "";
}

// dx by grad(create_graph) through softmax, then d⟨dx, v⟩/dx and d⟨dx, v⟩/dg; "" when all is right.
using Softmax = std::function<Tensor(const Tensor&)>;
struct Second {
    Tensor dx, hx, hg;  // hx: the second derivative along v; hg: J v (func::jvp_by_double_backward's trick reads it)
};
Second second(const Softmax& softmax_of, const Tensor& x0, const Tensor& g0, const Tensor& v) {
    const Tensor x = x0.detach().requires_grad_(true), g = g0.detach().requires_grad_(true);
    Second s;
    s.dx = grad({softmax_of(x)}, {x}, {g}, GradOptions().create_graph(true))[0];
    if (!s.dx.requires_grad()) return s;
    const auto h = grad({sum(mul(s.dx, v))}, {x, g}, {}, GradOptions().allow_unused(true));
    s.hx = h[0], s.hg = h[1];
    return s;
}
Array or_zeros(const Tensor& t, const Shape& shape) { return t.defined() ? t.data() : Array(xt::zeros<float>(shape)); }

std::string second_order(std::size_t i) {
    const Case& c = cases[i];
    const Tensor x = make_x(c), g = random(c, 1), v = random(c, 2);
    Second mine;
    try {
        mine = second([](const Tensor& t) { return ex09::softmax_rows(t); }, x, g, v);
    } catch (const std::exception& e) {
        return fmt::format("differentiating your dx threw, {}: {}", where(i), e.what());
    }
    if (!mine.dx.requires_grad())
        return fmt::format("dx is a constant, {}: it depends on neither x nor g in the graph (computed from arrays, "
                           "not from tensors of the graph), so nothing can differentiate it",
                           where(i));
    const Second ref = second([](const Tensor& t) { return softmax(t, -1); }, x, g, v);
    // The same formula with one y, or both, read as a constant: the fused-kernel bug, in its forms.
    const auto with_y = [&](bool outer, bool inner) {
        const Tensor xx = x.detach().requires_grad_(true), gg = g.detach().requires_grad_(true);
        const Tensor y = softmax(xx, -1), yc = y.detach();
        const Tensor dx = mul(outer ? y : yc, sub(gg, sum(mul(gg, inner ? y : yc), {1}, true)));
        return grad({sum(mul(dx, v))}, {xx}, {}, GradOptions().allow_unused(true))[0];
    };
    const std::vector<grading::Hypothesis> likely = {
        {"the y outside the brackets was read as a constant (saved_constant, or a tensor made from saved(...)): "
         "the fused-kernel bug, half of it",
         or_zeros(with_y(false, true), x.shape())},
        {"the y inside ⟨g, y⟩ was read as a constant (saved_constant, or a tensor made from saved(...)): "
         "the fused-kernel bug, half of it",
         or_zeros(with_y(true, false), x.shape())},
    };
    std::string m = grading::diagnose("d⟨dx, v⟩/dx (the second derivative along v), " + where(i), or_zeros(mine.hx, x.shape()),
                                      ref.hx.data(), 2e-4, likely);
    if (!m.empty() && (!mine.hx.defined() || xt::all(xt::equal(mine.hx.data(), 0.f))))
        m = where(i) + ": d⟨dx, v⟩/dx is zero: your dx does not depend on x in the graph. The saved output y was read as a "
            "constant (saved_constant, or a tensor made from saved(...)): the fused-kernel bug lesson 9 tells of";
    if (m.empty()) {
        m = grading::diagnose("d⟨dx, v⟩/dg (= J v, what func::jvp_by_double_backward reads), " + where(i), or_zeros(mine.hg, g.shape()), ref.hg.data(), 2e-4);
        if (!m.empty() && (!mine.hg.defined() || xt::all(xt::equal(mine.hg.data(), 0.f))))
            m = where(i) + ": d⟨dx, v⟩/dg is zero: your dx does not depend on g in the graph (g used as an array: g.data()?). "
                "A backward in ops must be a function of g too: func::jvp_by_double_backward differentiates it in g";
    }
    return m;
}

const char* const wait = "not graded until your dx is right to first order (above)";

// Your function ran under grad(create_graph), no xtgrad softmax did, and dx depends on x.
std::string runs_yours() {
    const Case& c = cases[0];
    const Tensor x = make_x(c).requires_grad_(true), g = random(c, 1);
    const long before = ex09::backward_in_ops_calls();
    const Tensor dx = grad({ex09::softmax_rows(x)}, {x}, {g}, GradOptions().create_graph(true))[0];
    if (ex09::backward_in_ops_calls() != before + 1)
        return "grad(create_graph) did not run softmax_rows's backward in ops once: was softmax_rows changed?";
    for (const std::string& op : grading::ops_in_graph(dx))
        if (op == "SoftmaxBackward" || op == "LogSoftmaxBackward")
            return fmt::format("your dx's graph holds xtgrad's own {}: the exercise is to write softmax's backward "
                               "from ops, not to differentiate xtgrad's softmax",
                               op);
    if (dx.requires_grad()) return "";
    // Constant in x (g here needs no gradient). Called directly with a g that needs one, a dx that
    // still has no graph read neither y nor g as a tensor of the graph: the y's are not the cause.
    const Tensor gg = random(c, 1).requires_grad_(true);
    const Tensor y = ex09::softmax_rows(make_x(c).requires_grad_(true));
    const Grads direct = ex09::softmax_backward_in_ops(*y.grad_fn(), gg);
    if (direct.size() == 1 && direct[0].defined() && !direct[0].requires_grad())
        return "dx has no graph (it depends on neither y nor g): was it made from .data() or detached, or were y and g "
               "both read as constants? A backward in ops returns the tensor its ops made, graph and all";
    return "dx is a constant: it does not depend on x in the graph. The saved output y was read as a constant "
           "(saved_constant, or a tensor made from saved(...)): the fused-kernel bug lesson 9 tells of";
}

std::string second_order_all() {
    for (std::size_t i = 0; i < cases.size(); ++i)
        if (std::string m = second_order(i); !m.empty()) return m;
    return "";
}

std::string gradgradchecks() {
    for (std::size_t i : {std::size_t{0}, std::size_t{1}, std::size_t{5}}) {
        GradcheckResult r;
        try {
            r = gradgradcheck([](const std::vector<Tensor>& t) { return ex09::softmax_rows(t[0]); },
                              {make_x(cases[i]).requires_grad_(true)});
        } catch (const std::exception& e) {
            return fmt::format("gradgradcheck threw, {}: {}", where(i), e.what());
        }
        if (!r.passed) return where(i) + ": " + r.message();
    }
    return "";
}

}  // namespace

TEST_CASE("09_softmax_double_backward: your dx, to first order, on 8 inputs") { GRADE(first_order_all()); }

TEST_CASE("09_softmax_double_backward: grad(create_graph) runs your function, and no xtgrad softmax") {
    GRADE(first_order_all().empty() ? runs_yours() : wait);
}

TEST_CASE("09_softmax_double_backward: second derivatives against xtgrad's softmax, on 8 inputs") {
    std::string m = first_order_all().empty() ? "" : wait;
    if (m.empty() && !runs_yours().empty()) m = "not graded until grad(create_graph) runs your dx (above)";
    GRADE(m.empty() ? second_order_all() : m);
}

TEST_CASE("09_softmax_double_backward: gradgradcheck (finite differences of your dx)") {
    std::string m = first_order_all().empty() ? "" : wait;
    if (m.empty() && !(runs_yours().empty() && second_order_all().empty()))
        m = "not graded until the second derivatives are right (above)";
    GRADE(m.empty() ? gradgradchecks() : m);
}

TEST_SUITE_END();
