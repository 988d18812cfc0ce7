// Exercise 02's grader, on 12 seeded random inputs (shapes from one row to seven columns, square
// and not, a constant row, large scores): your row_dots if you wrote it (the intermediate ⟨g, y⟩),
// your dx with the likely cause named, that only your node ran, then gradcheck. Each test stops
// at the first mismatch and waits for the ones before.
#include "exercise.hpp"
#include "diagnose.hpp"

#include <algorithm>
#include <cstdlib>
#include <functional>

using namespace xtgrad;

TEST_SUITE_BEGIN("02_softmax_backward");

namespace {

struct Case {
    std::size_t rows, cols;
    float scale;
    bool constant_row;
    std::uint64_t seed;
};
Case case_of(std::uint64_t seed) {
    const std::size_t rows = 1 + seed % 5, cols = seed % 4 == 0 ? rows : 2 + (seed * 5) % 6;  // every fourth square
    return {rows, cols, std::vector<float>{1.f, 2.f, 6.f}[seed % 3], seed % 5 == 2, 200 + seed};
}
std::string where(const Case& c) {
    return fmt::format("x of shape ({},{}) drawn randn·{:g}{}, seed {}", c.rows, c.cols, c.scale,
                       c.constant_row ? " with a constant first row" : "", c.seed);
}
Tensor make_x(const Case& c) {
    Tensor x = grading::random_tensor({c.rows, c.cols}, c.seed, c.scale);
    if (c.constant_row)
        for (std::size_t k = 0; k < c.cols; ++k) x.mutable_data()(0, k) = 0.3f;
    return x.requires_grad_(true);
}

// The shapes a wrong backward takes: per-row, per-column and total sums of g ⊙ y.
struct Sums {
    Array y, g, row, col;
    double total = 0;
};
Sums sums(const Array& y, const Array& g) {
    Sums s{y, g, xt::zeros<float>({y.shape(0)}), xt::zeros<float>({y.shape(1)})};
    for (std::size_t r = 0; r < y.shape(0); ++r)
        for (std::size_t k = 0; k < y.shape(1); ++k) {
            const float gy = g(r, k) * y(r, k);
            s.row(r) += gy, s.col(k) += gy, s.total += gy;
        }
    return s;
}
Array form(const Sums& s, const std::function<float(std::size_t, std::size_t)>& f) {
    Array h = s.g;
    for (std::size_t r = 0; r < h.shape(0); ++r)
        for (std::size_t k = 0; k < h.shape(1); ++k) h(r, k) = f(r, k);
    return h;
}

std::string intermediate(std::uint64_t seed) {
    const Case c = case_of(seed);
    const Array y = softmax(make_x(c), -1).data(), g = grading::random_tensor({c.rows, c.cols}, c.seed + 1000).data();
    const Array mine = ex02::row_dots(y, g);
    if (mine.dimension() == 0) return "";  // not written (an empty Array): optional
    const Sums s = sums(y, g);
    const Array total = xt::full_like(s.row, static_cast<float>(s.total));
    std::vector<grading::Hypothesis> likely = {{"it sums g alone, without y", Array(xt::sum(g, {1}))},
                                               {"it sums the whole tensor, not each row", total}};
    if (c.rows == c.cols) likely.push_back({"it sums each column (dim 0), not each row", s.col});
    return grading::diagnose("row_dots (⟨g, y⟩ of each row), " + where(c), mine, s.row, 1e-5, likely);
}

// dx's verdict for softmax y, upstream g and the right dx `want`, with the forms a wrong one takes.
std::string dx_verdict(const std::string& what, const Array& y_in, const Array& g, const Array& got, const Array& want) {
    const Sums s = sums(y_in, g);
    const Array& y = s.y;
    const std::size_t rows = y.shape(0), cols = y.shape(1);
    std::vector<grading::Hypothesis> likely = {
        {"it is y ⊙ g: the −⟨g, y⟩ term is missing", form(s, [&](auto r, auto k) { return y(r, k) * g(r, k); })},
        {"it is g − ⟨g, y⟩: the factor y is missing", form(s, [&](auto r, auto k) { return g(r, k) - s.row(r); })},
        {"⟨g, y⟩ is summed over each column, not each row", form(s, [&](auto r, auto k) { return y(r, k) * (g(r, k) - s.col(k)); })},
        {"⟨g, y⟩ is summed over the whole tensor, not each row",
         form(s, [&](auto r, auto k) { return y(r, k) * (g(r, k) - static_cast<float>(s.total)); })},
    };
    // a sum not set back to 0 at each row: row r subtracts the dots of rows 0..r
    Array running = s.row;
    for (std::size_t r = 1; r < rows; ++r) running(r) += running(r - 1);
    if (rows > 1)
        likely.push_back({"⟨g, y⟩ runs on from row to row: set the sum back to 0 at each row",
                          form(s, [&](auto r, auto k) { return y(r, k) * (g(r, k) - running(r)); })});
    Array last_zero = want;
    for (std::size_t r = 0; r < rows; ++r) last_zero(r, cols - 1) = 0;
    likely.push_back({"the last column is 0: does a loop over the columns stop one short?", last_zero});
    // y * (g - xt::sum(g * y, {1})), the sums (rows) not (rows, 1): where rows = cols it broadcasts, row k's into column k
    if (rows == cols)
        likely.push_back({"column k subtracts row k's ⟨g, y⟩: a per-row sum of shape (rows) lines up with the last axis; "
                          "reshape it to (rows, 1)",
                          form(s, [&](auto r, auto k) { return y(r, k) * (g(r, k) - s.row(k)); })});
    std::string m = grading::diagnose(what, got, want, 1e-5, likely);
    // no cause named ("; " starts one): say the trap a vectorised answer falls in, right maths and wrong values
    if (!m.empty() && m.find("; ") == std::string::npos) {
        const std::size_t at = std::min(m.find(" (XTGRAD_REVEAL=1"), m.find(" [there:"));
        m.insert(std::min(at, m.size()), "; no usual slip matches. If you sum each row with xt::sum inside the expression "
                                         "for dx: xtensor 0.24.3's lazy reducer that keeps the reduced axis returns wrong "
                                         "values; evaluate the sums into an Array first, or loop over the rows");
    }
    return m;
}

std::string dx(std::uint64_t seed) {
    const Case c = case_of(seed);
    const Tensor x = make_x(c), ref = x.detach().requires_grad_(true);
    const Array g = grading::random_tensor({c.rows, c.cols}, c.seed + 1000).data();
    ex02::softmax_rows(x).backward(g);
    softmax(ref, -1).backward(g);
    return dx_verdict("softmax backward, dx, " + where(c), softmax(ref.detach(), -1).data(), g, grading::grad_or_zeros(x),
                      ref.grad_array());
}

std::string only_yours(std::uint64_t seed) {
    const Case c = case_of(seed);
    const Tensor y = ex02::softmax_rows(make_x(c));
    return grading::only_yours_ran(grading::nodes_run([&] { y.backward(Array(xt::ones<float>({c.rows, c.cols}))); }),
                                   "SoftmaxRowsBackward");
}

template <class F>
std::string all_seeds(F&& f) {
    for (std::uint64_t seed = 1; seed <= 12; ++seed) try {
            if (std::string m = f(seed); !m.empty()) return m;
        } catch (const std::exception& e) {  // named with its case: a throw may depend on the shape
            return grading::threw(where(case_of(seed)), e);
        }
    return "";
}

}  // namespace

TEST_CASE("02_softmax_backward: row_dots, the per-row number of your derivation (graded if you wrote it)") { GRADE(all_seeds(intermediate)); }

TEST_CASE("02_softmax_backward: dx on 12 random inputs, and only your node ran") {
    std::string m = all_seeds(dx);
    GRADE(m.empty() ? all_seeds(only_yours) : m);
}

// The lesson's worked example (its gdb walk stops here): x and g fixed.
TEST_CASE("02_softmax_backward: dx for one upstream gradient g (the lesson's x)") {
    const Tensor x = Tensor::from_vector({1.f, 2.f, 3.f, 0.5f, -1.f, 0.f, 2.f, 2.f}, {2, 4}, true), ref = x.detach().requires_grad_(true);
    const Array g = Tensor::from_vector({1.f, -1.f, 0.5f, 2.f, 0.f, 3.f, -2.f, 1.f}, {2, 4}).data();
    std::string m;
    try {
        ex02::softmax_rows(x).backward(g);
        softmax(ref, -1).backward(g);
        m = dx_verdict("softmax backward, dx, the lesson's x", softmax(ref.detach(), -1).data(), g, grading::grad_or_zeros(x),
                       ref.grad_array());
    } catch (const std::exception& e) {
        m = grading::threw("the lesson's x (2,4)", e);
    }
    GRADE(m);
}

TEST_CASE("02_softmax_backward: gradcheck") {
    try {
        const GradcheckResult r = gradcheck([](const std::vector<Tensor>& v) { return ex02::softmax_rows(v[0]); },
                                            {make_x(case_of(3))});
        GRADE(r.passed ? "" : r.message());
    } catch (const std::exception& e) {
        GRADE(grading::threw("gradcheck's x, " + where(case_of(3)), e));
    }
}

// The grader's own check (exercises/check.sh runs it with XTGRAD_GRADER_SELF_TEST=1): the
// per-row sums left (rows), not (rows, 1): they throw on a wide x and broadcast on a square one.
TEST_CASE("grader_self_test: wrong answers, 02_softmax_backward" *
          doctest::skip(std::getenv("XTGRAD_GRADER_SELF_TEST") == nullptr)) {
    const Case c = case_of(4);  // square, (5,5)
    const Array y = softmax(make_x(c), -1).data(), g = grading::random_tensor({c.rows, c.cols}, c.seed + 1000).data();
    const Array dots = xt::sum(g * y, {1}), want = y * (g - xt::reshape_view(dots, {c.rows, std::size_t{1}})),
                square = y * (g - dots);
    std::string m = dx_verdict("dx", y, g, square, want);
    CHECK_MESSAGE(m.find("column k subtracts row k's ⟨g, y⟩") != std::string::npos, m);
    Array odd = want;  // off at one element only: no slip matches, so the reducer trap is named
    odd(1, 2) += 0.5f;
    m = dx_verdict("dx", y, g, odd, want);
    CHECK_MESSAGE(m.find("dx: 1 of 25 elements off, the worst at (1,2) (off by 0.5, tolerance 1e-05); no usual slip matches. "
                         "If you sum each row with xt::sum") == 0, m);
    try {
        const Array wide = xt::zeros<float>({2, 7});
        (void)Array(wide - xt::sum(wide, {1}));
        FAIL("xtensor broadcast (2,7) against (2)");
    } catch (const std::exception& e) {
        const std::string t = grading::threw(where(case_of(1)), e);
        CHECK_MESSAGE(t.find("your code threw on x of shape (2,7) drawn randn·2, seed 201: Incompatible dimension") == 0, t);
        CHECK_MESSAGE(t.find("reshape it to (rows, 1)") != std::string::npos, t);
    }
}

TEST_SUITE_END();
