// docs/learn/: the code the lessons show, compiled and checked. Each lesson's block says
// `doc-check: snippet-of tests/docs/learn_test.cpp`: its lines appear below verbatim.
#include <xtgrad/autograd/node.hpp>
#include "tests/test_util.hpp"

TEST_SUITE_BEGIN("docs");

using namespace xtgrad;

TEST_CASE("learn: lesson 0, a*b + c by the engine; a used twice gets the sum") {
    // --- docs/learn/00_scalar.md begins
    Tensor a = Tensor::scalar(2, true), b = Tensor::scalar(-3, true), c = Tensor::scalar(10, true);
    Tensor L = a * b + c;
    L.backward();
    CHECK(a.grad().item() == -3);  // dL/da = b
    CHECK(b.grad().item() == 2);   // dL/db = a
    CHECK(c.grad().item() == 1);   // dL/dc = 1
    Tensor x = Tensor::scalar(2, true), y = Tensor::scalar(-3, true);
    Tensor M = x * y + x;          // x is used twice
    M.backward();
    CHECK(x.grad().item() == -2);  // y + 1: the two uses' gradients, summed
    // --- docs/learn/00_scalar.md ends
}

namespace {
// --- docs/learn/01_first_op.md begins
// y = x², elementwise: the forward's values, then the node that knows how to go back.
Tensor square(const Tensor& x) {
    Array y = x.data() * x.data();
    return make_result(std::move(y), "SquareBackward", /*inputs=*/{x}, /*saved=*/{{"self", x}},
                       [](Node& self, const Array& g) {
                           // dL/dx = dL/dy · dy/dx = g · 2x
                           if (self.needs_grad(0)) self.accumulate(0, Array(2.f * g * self.saved("self")));
                       });
}
// --- docs/learn/01_first_op.md ends

// The same op with its backward broken on purpose: the factor 2 forgotten.
Tensor square_broken(const Tensor& x) {
    return make_result(Array(x.data() * x.data()), "SquareBackward", {x}, {{"self", x}},
                       [](Node& self, const Array& g) {
                           if (self.needs_grad(0)) self.accumulate(0, Array(g * self.saved("self")));
                       });
}
}  // namespace

TEST_CASE("learn: lesson 1, square passes gradcheck; with its backward broken it fails and says how") {
    Tensor x = Tensor::from_vector({1.f, -2.f, 0.5f, 3.f}, {2, 2}, true);
    // --- docs/learn/01_first_op.md gradcheck begins
    GradcheckResult r = gradcheck([](const std::vector<Tensor>& v) { return square(v[0]); }, {x});
    CHECK_MESSAGE(r.passed, r.message());  // the message names the worst element, passed or not
    // --- docs/learn/01_first_op.md gradcheck ends
    CHECK(r.checked == 4);
    GradcheckResult broken = gradcheck([](const std::vector<Tensor>& v) { return square_broken(v[0]); }, {x});
    CHECK_FALSE(broken.passed);
    CHECK(broken.op == "SquareBackward");
    // what lesson 1 tells the learner to read in the message: numeric is twice analytic
    CHECK(broken.numeric == doctest::Approx(2 * broken.analytic).epsilon(0.02));
    CHECK(broken.message().rfind("gradcheck FAILED for SquareBackward: 4 elements compared; worst: input 0 at (", 0) == 0);
}

TEST_SUITE_END();
