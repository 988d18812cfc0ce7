// gradcheck: compare backward() with central finite differences, like
// torch.autograd.gradcheck. One line in a doctest:
//
//   CHECK(gradcheck([](const std::vector<Tensor>& x) { return softmax(x[0], -1); }, {x}));
//
// The function's output y is reduced to the scalar L = sum(y * R) with a fixed random R (so
// a backward that ignores its incoming gradient fails). For every element of every input
// that requires grad, the numeric derivative (L(x+eps) - L(x-eps)) / 2eps — with L summed
// in double — is compared with the analytic one:
//   pass iff |analytic - numeric| <= atol + rtol * |numeric|   for every element.
// The result names the worst element: input, index, both values and the op under test.
// Float32 limits how tight this can be; tests/gradcheck_test.cpp shows the default
// tolerance still catches a missing factor of 2 and a transposed gradient. What would make the
// comparison meaningless is an Error: a non-finite input, an eps float32 cannot step by at the
// inputs' values, an output that is not finite within eps or whose shape moves with the values, a
// function that writes into its inputs. Inputs and their .grad are left as they were, whatever
// happens; a non-leaf input is checked as a leaf of its values.
#pragma once

#include <xtgrad/autograd/tensor.hpp>

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace xtgrad {

struct GradcheckOptions {
    double eps = 1e-2;    // float32 inputs: smaller steps drown in rounding error
    double atol = 2e-3;
    double rtol = 2e-2;
    std::uint64_t seed = 1234;  // seed of R
    // Fast mode (torch's gradcheck(fast_mode=True)): per input, one random direction u of unit norm
    // instead of every element; <dL/dx, u> against the central difference of L = sum(f(x) * R)
    // along u. Two evaluations of f per input instead of two per element, so a whole model's
    // parameters take seconds; the price: a wrong gradient confined to one of an input's n elements
    // moves the comparison by ~1/sqrt(n) of what the element-wise check sees.
    bool fast = false;
};

struct GradcheckResult {
    bool passed = true;
    std::string check = "gradcheck";  // or "gradgradcheck", for the message
    std::string op;             // grad_fn of the output, e.g. "SoftmaxBackward" (gradgradcheck: of f's output)
    std::size_t checked = 0;    // number of elements compared (in fast mode, of directions: one per input)
    bool fast = false;          // fast mode: the worst is a direction, and index is empty
    // the worst element (largest error relative to its tolerance)
    std::size_t input = 0;
    std::string input_name;
    std::vector<std::size_t> index;
    double analytic = 0, numeric = 0;
    double ratio = 0;           // |analytic - numeric| / tolerance; > 1 fails
    std::string message() const;
    explicit operator bool() const { return passed; }
};
std::ostream& operator<<(std::ostream& os, const GradcheckResult& r);

using GradcheckFn = std::function<Tensor(const std::vector<Tensor>&)>;

// Inputs that require grad are checked; if none does, all are. The caller's state is left as it
// was: every .grad (the inputs', and those of parameters f uses) and every requires_grad flag.
GradcheckResult gradcheck(const GradcheckFn& f, std::vector<Tensor> inputs, const GradcheckOptions& options = {});

// gradgradcheck: the same check one order up, as torch.autograd.gradgradcheck. The first-order
// gradients of sum(f(x) * R) taken with create_graph (autograd/grad.hpp), all inputs' flattened
// into one vector G(x), are themselves gradchecked: G's backward — the backward of f's backward,
// written in xtgrad's ops — against finite differences of G. A node whose backward cannot be
// differentiated makes it throw that node's Error.
//
//   CHECK(gradgradcheck([](const std::vector<Tensor>& x) { return softmax(x[0], -1); }, {x}));
GradcheckResult gradgradcheck(const GradcheckFn& f, std::vector<Tensor> inputs, const GradcheckOptions& options = {});

// The G of gradgradcheck, as a function of its own: a way to check any order (the first-order
// gradients of G with create_graph are f's third derivatives, gradgradcheck(first_order_gradients(f)) checks them).
GradcheckFn first_order_gradients(GradcheckFn f, std::uint64_t seed = 4321);

// jvpcheck: forward mode's jvp rules, as torch.autograd.gradcheck(check_forward_ad=True). With a
// fixed random tangent v per input, J v from forward mode (dual tensors, autograd/forward_ad.hpp)
// is compared, element by element of f's output, with
//   - central finite differences along v: (f(x + eps v) - f(x - eps v)) / 2eps, to the
//     tolerance of gradcheck (atol + rtol |numeric|);
//   - J v by the double-backward trick (func::jvp_by_double_backward), another road to the same
//     numbers, to a float32 tolerance (reference_atol + reference_rtol |reference|).
// Every input gets a tangent (ints and masks cannot carry one). The result names the worst output
// element (`index`; `input` is unused) and the output's op; `analytic` is forward mode's value,
// `numeric` the finite difference, `reference` the double-backward value.
struct JvpcheckOptions {
    double eps = 1e-2;
    double atol = 2e-3;
    double rtol = 2e-2;
    double reference_atol = 1e-5;
    double reference_rtol = 1e-4;
    std::uint64_t seed = 2024;  // seed of the tangents
};
struct JvpcheckResult : GradcheckResult {
    double reference = 0;
    double reference_ratio = 0;  // |analytic - reference| / its tolerance; > 1 fails
    std::string message() const;
};
JvpcheckResult jvpcheck(const GradcheckFn& f, const std::vector<Tensor>& inputs, const JvpcheckOptions& options = {});

}  // namespace xtgrad
