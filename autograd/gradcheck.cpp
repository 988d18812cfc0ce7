#include <xtgrad/autograd/gradcheck.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/forward_ad.hpp>
#include <xtgrad/autograd/func.hpp>
#include <xtgrad/autograd/grad.hpp>
#include <xtgrad/autograd/grad_mode.hpp>
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/random/random.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <ostream>
#include <unordered_set>

namespace xtgrad {

namespace {

// f's output must keep its shape when its inputs move by eps (a shape that depends on the values
// would compare other elements, or read past the end of the output)
void check_same_shape(const char* check, const Tensor& moved, const Shape& first) {
    if (moved.shape() != first)
        fail("{}: the function's output has shape {} at the inputs given but {} with an input moved by eps; "
             "its shape must not depend on the inputs' values",
             check, shape_str(first), shape_str(moved.shape()));
}

double weighted_sum(const Tensor& y, const Array& r) {
    check_same_shape("gradcheck", y, shape_of(r));
    double s = 0;
    for (std::size_t i = 0; i < r.size(); ++i) s += static_cast<double>(y.ptr()[i]) * r.data()[i];
    return s;
}

std::vector<std::size_t> unravel(std::size_t flat, const Shape& shape) {
    std::vector<std::size_t> idx(shape.size());
    for (std::size_t d = shape.size(); d-- > 0;) {
        idx[d] = flat % shape[d];
        flat /= shape[d];
    }
    return idx;
}

// The caller's autograd state, put back when gradcheck returns or throws: gradcheck's own
// backward must leave no trace, as torch's gradcheck (it computes with autograd.grad, which
// writes no .grad). Every tensor the output's graph reaches has its .grad set aside before the
// backward and restored afterwards (so parameters a function captures are kept too), and an
// input gradcheck switched requires_grad on for is switched off again.
class KeepCallerState {
public:
    KeepCallerState() = default;
    KeepCallerState(const KeepCallerState&) = delete;
    KeepCallerState& operator=(const KeepCallerState&) = delete;
    ~KeepCallerState() {
        for (auto& [impl, grad] : grads_) impl->grad = std::move(grad);
        for (const ImplPtr& impl : switched_on_) impl->requires_grad = false;
    }
    void switch_on(Tensor& t) {
        t.requires_grad_(true);
        switched_on_.push_back(t.impl_ptr());
    }
    // Sets aside the .grad of every tensor y's graph reaches, y included.
    void set_aside_grads(const Tensor& y) {
        std::vector<ImplPtr> stack{y.impl_ptr()};
        while (!stack.empty()) {
            ImplPtr t = std::move(stack.back());
            stack.pop_back();
            if (t == nullptr || !seen_.insert(t.get()).second) continue;
            grads_.emplace_back(t, std::move(t->grad));
            t->grad = nullptr;
            if (t->grad_fn)
                for (const ImplPtr& in : t->grad_fn->inputs()) stack.push_back(in);
        }
    }

private:
    std::vector<std::pair<ImplPtr, std::shared_ptr<Array>>> grads_;
    std::vector<ImplPtr> switched_on_;
    std::unordered_set<const TensorImpl*> seen_;
};

// The inputs' values as given, put back when the check ends, also when f throws with an input moved
// by eps: a gradcheck that fails with an Error leaves the caller's tensors as they were. Since every
// move is undone, a value that differs at the end was written by f, which a check cannot allow.
class InputsKept {
public:
    explicit InputsKept(std::vector<Tensor>& inputs) : inputs_(inputs) {
        for (const Tensor& x : inputs) kept_.push_back(x.data());
    }
    InputsKept(const InputsKept&) = delete;
    InputsKept& operator=(const InputsKept&) = delete;
    ~InputsKept() { put_back(); }
    const Array& kept(std::size_t i) const { return kept_[i]; }
    // Only an input that differs is written (after a check that passed, none does).
    void put_back() {
        for (std::size_t i = 0; i < inputs_.size(); ++i)
            if (changed(i))
                std::copy(kept_[i].begin(), kept_[i].end(), inputs_[i].mutable_ptr());
    }
    // An Error if f wrote into an input (compared bit for bit: a NaN it left is a write too)
    void check_unwritten(const char* check) const {
        for (std::size_t i = 0; i < inputs_.size(); ++i) {
            if (!changed(i)) continue;
            for (std::size_t j = 0; j < kept_[i].size(); ++j)  // which element, for the message
                if (std::memcmp(inputs_[i].ptr() + j, kept_[i].data() + j, sizeof(float)) != 0)
                    fail("{}: the function wrote into input {} (at {}: {} became {}); a function checked must not "
                         "change its inputs (its values are put back)",
                         check, i, shape_str(unravel(j, inputs_[i].shape())), kept_[i].data()[j], inputs_[i].ptr()[j]);
        }
    }

private:
    // Compared over the values as given (an input whose values were replaced by others of another
    // size is left as it is: there is nothing of its own to put back into)
    bool changed(std::size_t i) const {
        return kept_[i].size() != 0 && inputs_[i].ptr() != nullptr && inputs_[i].numel() == kept_[i].size() &&
               std::memcmp(inputs_[i].ptr(), kept_[i].data(), kept_[i].size() * sizeof(float)) != 0;
    }
    std::vector<Tensor>& inputs_;
    std::vector<Array> kept_;
};

// Values that are not finite make every comparison NaN: refused, naming the input and the element.
void check_finite(const char* check, const std::vector<Tensor>& inputs) {
    for (std::size_t i = 0; i < inputs.size(); ++i)
        for (std::size_t j = 0; j < inputs[i].numel(); ++j)
            if (!std::isfinite(inputs[i].ptr()[j]))
                fail("{}: input {} is {} at {}; finite differences need finite values", check, i, inputs[i].ptr()[j],
                     shape_str(unravel(j, inputs[i].shape())));
}

// A sum of f's output at a moved input that is not finite (a pole, an overflow within eps): no slope
// to compare with. Named by the input, not reported as a NaN that looks like a number; where() says
// how it was moved, its text built only for the message (the element-wise loop calls this per element).
template <class Where>
double finite_sum(double sum, std::size_t input, double eps, const Where& where) {
    if (!std::isfinite(sum))
        fail("gradcheck: the function's output is not finite with input {} moved by eps {} {}; a smaller eps, or "
             "inputs where the function is finite nearby",
             input, eps, where());
    return sum;
}

// |a - b| against atol + rtol |b|; with both tolerances 0 (an exact check), equal values pass
double tolerance_ratio(double a, double b, double atol, double rtol) {
    const double diff = std::abs(a - b);
    return diff == 0 ? 0 : diff / (atol + rtol * std::abs(b));
}

std::string counted(std::size_t n, const char* what) { return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s"); }

// A step that is not a finite positive number, or a tolerance that is negative or not finite, makes
// every comparison NaN or meaningless: refused before f runs, naming the option and its value.
void check_options(const char* check, double eps, std::initializer_list<std::pair<const char*, double>> tolerances) {
    if (!std::isfinite(eps) || eps <= 0) fail("{}: eps must be a finite number above 0, got {}", check, eps);
    for (const auto& [name, value] : tolerances)
        if (!std::isfinite(value) || value < 0) fail("{}: {} must be a finite number >= 0, got {}", check, name, value);
}

}  // namespace

std::string GradcheckResult::message() const {
    return fmt::format("{} {} for {}: {} compared; worst: input {}{} {}: analytic {:.6g}, "
                       "numeric {:.6g} ({:.3g}x the tolerance)",
                       check, passed ? "passed" : "FAILED", op.empty() ? "<leaf>" : op,
                       fast ? counted(checked, "random direction") + " (fast mode)" : counted(checked, "element"), input,
                       input_name.empty() ? "" : " '" + input_name + "'",
                       fast ? "along its direction" : "at " + shape_str(index), analytic, numeric, ratio);
}

std::ostream& operator<<(std::ostream& os, const GradcheckResult& r) { return os << r.message(); }

GradcheckResult gradcheck(const GradcheckFn& f, std::vector<Tensor> inputs, const GradcheckOptions& opt) {
    check_options("gradcheck", opt.eps, {{"atol", opt.atol}, {"rtol", opt.rtol}});
    check_finite("gradcheck", inputs);
    // A non-leaf input (x = a * 2) keeps no .grad of its own: checked as a leaf of its values, the
    // gradient torch's gradcheck (autograd.grad) takes with respect to it
    for (Tensor& t : inputs)
        if (t.requires_grad() && !t.is_leaf()) {
            Tensor leaf(Array(t.data()), true);
            leaf.set_name(t.name());
            t = leaf;
        }
    InputsKept kept(inputs);
    KeepCallerState keep;
    bool any = false;
    for (const Tensor& t : inputs) any = any || t.requires_grad();
    if (!any)
        for (Tensor& t : inputs) keep.switch_on(t);

    // analytic: one backward with upstream gradient R, into .grad slots set aside for it (grad mode
    // on: a caller's NoGradGuard, or an outer gradcheck's numeric pass, would leave f no graph)
    Tensor y;
    {
        const EnableGradGuard on;
        y = f(inputs);
    }
    if (!y.defined()) fail("gradcheck: the function returned an undefined tensor");
    keep.set_aside_grads(y);
    for (const Tensor& t : inputs) keep.set_aside_grads(t);
    Generator gen(opt.seed);
    const Array r = randn(y.shape(), gen).data();
    GradcheckResult res;
    res.op = y.grad_fn() ? y.grad_fn()->op() : "";
    if (!y.requires_grad()) fail("gradcheck: the function's output does not depend on any input that requires grad");
    if (!std::isfinite(weighted_sum(y, r))) fail("gradcheck: the function's output is not finite at the inputs given");
    kept.check_unwritten("gradcheck");
    y.backward(r);

    NoGradGuard no_grad;
    double worst = -1;
    // element: the flat index compared, unravelled only for a new worst; none in fast mode
    constexpr std::size_t kDirection = static_cast<std::size_t>(-1);
    const auto compare = [&](std::size_t i, std::size_t element, double a, double numeric) {
        const double ratio = tolerance_ratio(a, numeric, opt.atol, opt.rtol);
        ++res.checked;
        if (ratio > worst || std::isnan(ratio)) {
            worst = std::isnan(ratio) ? INFINITY : ratio;
            res.input = i;
            res.input_name = inputs[i].name();
            res.index = element == kDirection ? std::vector<std::size_t>{} : unravel(element, inputs[i].shape());
            res.analytic = a;
            res.numeric = numeric;
            res.ratio = worst;
        }
    };
    res.fast = opt.fast;
    Generator directions(opt.seed + 1);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        Tensor& x = inputs[i];
        if (!x.requires_grad() || x.numel() == 0) continue;
        const Array analytic = x.has_grad() ? x.grad_array() : Array(xt::zeros<float>(x.shape()));
        const Array& given = kept.kept(i);
        float* p = x.mutable_ptr();
        if (opt.fast) {
            // x + eps u and x - eps u in float32; the analytic side uses the steps actually taken
            const Array u = randn(x.shape(), directions).data();
            const double norm = std::sqrt(xt::sum(xt::square(xt::cast<double>(u)))());
            Array plus_x = given, minus_x = given;
            double a = 0, taken = 0;
            for (std::size_t j = 0; j < x.numel(); ++j) {
                const double step = opt.eps * u.data()[j] / (norm > 0 ? norm : 1);
                plus_x.data()[j] = static_cast<float>(given.data()[j] + step);
                minus_x.data()[j] = static_cast<float>(given.data()[j] - step);
                const double moved = static_cast<double>(plus_x.data()[j]) - minus_x.data()[j];
                a += analytic.data()[j] * moved;
                taken += moved * moved;
            }
            // float32 keeps a step of eps only where the values are small enough beside it
            if (std::sqrt(taken) < opt.eps)
                fail("gradcheck (fast mode): eps {} is lost in float32 rounding at input {}'s values (largest |x| {}): "
                     "a step of length {} moved them by {}; a larger eps",
                     opt.eps, i, xt::amax(xt::abs(given))(), 2 * opt.eps, std::sqrt(taken));
            std::copy(plus_x.begin(), plus_x.end(), p);
            const auto along = [] { return "along a random direction"; };
            const double plus = finite_sum(weighted_sum(f(inputs), r), i, opt.eps, along);
            std::copy(minus_x.begin(), minus_x.end(), p);
            const double minus = finite_sum(weighted_sum(f(inputs), r), i, opt.eps, along);
            std::copy(given.begin(), given.end(), p);
            compare(i, kDirection, a / (2 * opt.eps), (plus - minus) / (2 * opt.eps));
            continue;
        }
        for (std::size_t j = 0; j < x.numel(); ++j) {
            const float v = given.data()[j];
            const float up = static_cast<float>(v + opt.eps), down = static_cast<float>(v - opt.eps);
            // divide by the step actually taken in float32; none at all is no derivative
            const double step = static_cast<double>(up) - static_cast<double>(down);
            if (step == 0)
                fail("gradcheck: eps {} does not move input {}'s element at {} (value {}) in float32; a larger eps",
                     opt.eps, i, shape_str(unravel(j, x.shape())), v);
            const auto at = [&] { return "(at " + shape_str(unravel(j, x.shape())) + ")"; };
            p[j] = up;
            const double plus = finite_sum(weighted_sum(f(inputs), r), i, opt.eps, at);
            p[j] = down;
            const double minus = finite_sum(weighted_sum(f(inputs), r), i, opt.eps, at);
            p[j] = v;
            compare(i, j, analytic.data()[j], (plus - minus) / step);
        }
    }
    kept.check_unwritten("gradcheck");
    res.passed = worst <= 1.0;
    return res;
}

GradcheckFn first_order_gradients(GradcheckFn f, std::uint64_t seed) {
    return [f = std::move(f), seed](const std::vector<Tensor>& x) {
        const EnableGradGuard on;  // gradcheck evaluates G under NoGradGuard; G needs its graph
        const Tensor y = f(x);
        Generator gen(seed);
        const Tensor loss = sum(mul(y, randn(y.shape(), gen)));
        std::vector<Tensor> wanted;
        for (const Tensor& t : x)
            if (t.requires_grad()) wanted.push_back(t);
        if (wanted.empty() || !loss.requires_grad())
            fail("gradgradcheck: the function's output does not depend on any input that requires grad");
        const std::vector<Tensor> g = grad({loss}, wanted, {}, GradOptions().create_graph(true).allow_unused(true));
        std::vector<Tensor> flat;
        for (std::size_t i = 0; i < g.size(); ++i)
            flat.push_back(g[i].defined() ? reshape(g[i], {-1}) : Tensor::zeros({wanted[i].numel()}));
        // tied to an input with a zero derivative, so a G that is constant (f linear) still has a graph
        return add(cat(flat, 0), mul(sum(wanted[0]), 0.f));
    };
}

GradcheckResult gradgradcheck(const GradcheckFn& f, std::vector<Tensor> inputs, const GradcheckOptions& options) {
    check_options("gradgradcheck", options.eps, {{"atol", options.atol}, {"rtol", options.rtol}});
    bool any = false;
    for (const Tensor& t : inputs) any = any || t.requires_grad();
    if (!any)  // as gradcheck: none asked for means all; G needs them switched on to take f's gradients
        fail("gradgradcheck: no input requires grad; set requires_grad on the inputs to check");
    check_finite("gradgradcheck", inputs);
    std::string op;  // the op whose second derivative is checked, for the message
    {
        const EnableGradGuard on;
        const Tensor y = f(inputs);
        if (y.defined() && y.grad_fn()) op = y.grad_fn()->op();
    }
    GradcheckResult res = gradcheck(first_order_gradients(f), std::move(inputs), options);
    res.check = "gradgradcheck";
    res.op = op;
    return res;
}

std::string JvpcheckResult::message() const {
    return fmt::format("jvpcheck {} for {}: {} output elements compared; worst at {}: forward mode {:.6g}, finite "
                       "difference {:.6g} ({:.3g}x the tolerance), double backward {:.6g} ({:.3g}x its tolerance)",
                       passed ? "passed" : "FAILED", op.empty() ? "<leaf>" : op, checked, shape_str(index), analytic,
                       numeric, ratio, reference, reference_ratio);
}

JvpcheckResult jvpcheck(const GradcheckFn& f, const std::vector<Tensor>& inputs, const JvpcheckOptions& opt) {
    check_options("jvpcheck", opt.eps,
                  {{"atol", opt.atol}, {"rtol", opt.rtol}, {"reference_atol", opt.reference_atol},
                   {"reference_rtol", opt.reference_rtol}});
    check_finite("jvpcheck", inputs);
    std::vector<Tensor> handles = inputs;
    // f gets dual tensors and moved copies, but an input without grad reaches it as a handle on the
    // caller's values (make_dual and the double-backward reference detach it): put back, and f's
    // writes refused, as gradcheck's
    InputsKept kept(handles);
    Generator gen(opt.seed);
    std::vector<Tensor> tangents;
    for (const Tensor& x : inputs) tangents.push_back(randn(x.shape(), gen));
    JvpcheckResult res;
    // forward mode: f once on dual inputs
    Tensor y, forward;
    {
        forward_ad::DualLevel level;
        std::vector<Tensor> duals;
        for (std::size_t i = 0; i < inputs.size(); ++i) duals.push_back(forward_ad::make_dual(inputs[i], tangents[i]));
        y = f(duals);
        if (!y.defined()) fail("jvpcheck: the function returned an undefined tensor");
        res.op = y.grad_fn() ? y.grad_fn()->op() : "";
        forward = forward_ad::unpack_dual(y).tangent;
        if (!forward.defined()) forward = Tensor::zeros(y.shape());
    }
    if (res.op.empty()) {  // no input required grad, so forward mode recorded no graph: the op's name from one that does
        const EnableGradGuard on;
        std::vector<Tensor> leaves;
        for (const Tensor& x : inputs) leaves.push_back(Tensor(Array(x.data()), true));
        const Tensor named = f(leaves);
        res.op = named.defined() && named.grad_fn() ? named.grad_fn()->op() : "";
    }
    const Tensor reference = func::jvp_by_double_backward(f, inputs, tangents).second;
    // finite differences along the tangents, in double from float32 evaluations
    NoGradGuard no_grad;
    std::vector<Tensor> up, down;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        up.push_back(Tensor(Array(inputs[i].data() + static_cast<float>(opt.eps) * tangents[i].data())));
        down.push_back(Tensor(Array(inputs[i].data() - static_cast<float>(opt.eps) * tangents[i].data())));
        // the difference divides by 2 eps: the step float32 kept must be that step, within 1 %
        const double intended = 2 * opt.eps * std::sqrt(xt::sum(xt::square(xt::cast<double>(tangents[i].data())))());
        const double off = std::sqrt(xt::sum(xt::square(xt::cast<double>(up[i].data()) - xt::cast<double>(down[i].data()) -
                                                        2 * opt.eps * xt::cast<double>(tangents[i].data())))());
        if (off > 0.01 * intended)
            fail("jvpcheck: eps {} is lost in float32 rounding at input {}'s values (largest |x| {}): the step taken is "
                 "off by {:.3g} % of its length; a larger eps",
                 opt.eps, i, inputs[i].numel() > 0 ? xt::amax(xt::abs(inputs[i].data()))() : 0.f, 100 * off / intended);
    }
    const Tensor plus = f(up), minus = f(down);
    for (const Tensor* t : std::initializer_list<const Tensor*>{&forward, &reference, &plus, &minus})
        check_same_shape("jvpcheck", *t, y.shape());
    for (const Tensor* t : {&plus, &minus})
        for (std::size_t j = 0; j < t->numel(); ++j)
            if (!std::isfinite(t->ptr()[j]))
                fail("jvpcheck: the function's output is not finite at {} with the inputs moved by eps {} along the "
                     "tangents; a smaller eps, or inputs where the function is finite nearby",
                     shape_str(unravel(j, y.shape())), opt.eps);
    double worst = -1;
    for (std::size_t j = 0; j < forward.numel(); ++j) {
        const double a = forward.ptr()[j], ref = reference.ptr()[j];
        const double numeric =
            (static_cast<double>(plus.ptr()[j]) - static_cast<double>(minus.ptr()[j])) / (2 * opt.eps);
        double ratio = tolerance_ratio(a, numeric, opt.atol, opt.rtol);
        const double ref_ratio = tolerance_ratio(a, ref, opt.reference_atol, opt.reference_rtol);
        if (std::isnan(ratio) || std::isnan(ref_ratio)) ratio = INFINITY;
        ++res.checked;
        if (std::max(ratio, ref_ratio) > worst) {
            worst = std::max(ratio, ref_ratio);
            res.index = unravel(j, forward.shape());
            res.analytic = a;
            res.numeric = numeric;
            res.reference = ref;
            res.ratio = ratio;
            res.reference_ratio = ref_ratio;
        }
    }
    kept.check_unwritten("jvpcheck");
    res.passed = worst <= 1.0;
    return res;
}

}  // namespace xtgrad
