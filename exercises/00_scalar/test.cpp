// Exercise 00's grader: the engine's gradients against yours. A wrong number is named with the
// likely slip, not with its value (XTGRAD_REVEAL=1 shows the values, after a try of your own).
#include "exercise.hpp"
#include "diagnose.hpp"

using namespace xtgrad;

TEST_SUITE_BEGIN("00_scalar");

namespace {
// Each of your numbers, in turn; all the wrong ones are listed, one line each.
std::string grade(const std::vector<std::string>& messages) {
    std::string out;
    for (const std::string& m : messages)
        if (!m.empty()) out += (out.empty() ? "" : "\n") + m;
    return out;
}
}  // namespace

TEST_CASE("00_scalar: L = (a + b)*c") {
    Tensor a = Tensor::scalar(2, true), b = Tensor::scalar(-3, true), c = Tensor::scalar(10, true);
    Tensor L = (a + b) * c;
    L.backward();
    const ex00::Grads mine = ex00::by_hand_sum_times();
    const double s = 2 + -3;
    const char* through_sum = "1 is what + sends on per unit of what reaches it; what reaches it is dL/ds = c";
    GRADE(grade({grading::diagnose_scalar("L = (a + b)*c: dL/da", mine.da, a.grad().item(), 1e-6, {{through_sum, 1}}),
                 grading::diagnose_scalar("L = (a + b)*c: dL/db", mine.db, b.grad().item(), 1e-6, {{through_sum, 1}}),
                 grading::diagnose_scalar("L = (a + b)*c: dL/dc", mine.dc, c.grad().item(), 1e-6,
                                          {{"that is a or b alone: c multiplies the whole sum s = a + b", 2},
                                           {"that is a or b alone: c multiplies the whole sum s = a + b", -3},
                                           {"1 is dL/dc when c is added (the page's a·b + c); here c multiplies the "
                                            "sum s = a + b",
                                            -s}})}));
}

TEST_CASE("00_scalar: L = a*a*b (a used twice)") {
    Tensor a = Tensor::scalar(2, true), b = Tensor::scalar(-3, true);
    Tensor L = a * a * b;
    L.backward();
    const ex00::Grads mine = ex00::by_hand_square_times();
    GRADE(grade({grading::diagnose_scalar("L = a*a*b: dL/da", mine.da, a.grad().item(), 1e-6,
                                          {{"that is the share of one use of a: a is used twice, and its gradient is the "
                                            "sum of both uses' shares",
                                            2 * -3},
                                           {"that is a·a, which is dL/db: are da and db swapped?", 2 * 2}}),
                 grading::diagnose_scalar("L = a*a*b: dL/db", mine.db, b.grad().item(), 1e-6,
                                          {{"that is a, from one factor: b multiplies a·a", 2},
                                           {"that is dL/da's value: are da and db swapped?", 2 * 2 * -3}}),
                 grading::diagnose_scalar("L = a*a*b: dc (there is no c)", mine.dc, 0.0, 0.0)}));
}

TEST_SUITE_END();
