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

// An input's values, put back when its check ends, also when f throws with the input moved by ±eps:
// a gradcheck that fails with an Error leaves the caller's tensors as they were.
class RestoreValues {
public:
    explicit RestoreValues(Tensor& x) : data_(x.mutable_ptr()), kept_(x.data()) {}
    RestoreValues(const RestoreValues&) = delete;
    RestoreValues& operator=(const RestoreValues&) = delete;
    ~RestoreValues() { std::copy(kept_.begin(), kept_.end(), data_); }
    const Array& kept() const { return kept_; }

private:
    float* data_;
    Array kept_;
};

// A step that is not a finite positive number, or a tolerance that is negative or not finite, makes
// every comparison NaN or meaningless: refused before f runs, naming the option and its value.
void check_options(const char* check, double eps, std::initializer_list<std::pair<const char*, double>> tolerances) {
    if (!std::isfinite(eps) || eps <= 0) fail("{}: eps must be a finite number above 0, got {}", check, eps);
    for (const auto& [name, value] : tolerances)
        if (!std::isfinite(value) || value < 0) fail("{}: {} must be a finite number >= 0, got {}", check, name, value);
}

}  // namespace

std::string GradcheckResult::message() const {
    return fmt::format("gradcheck {} for {}: {} {} compared; worst: input {}{} {}: analytic {:.6g}, "
                       "numeric {:.6g} ({:.3g}x the tolerance)",
                       passed ? "passed" : "FAILED", op.empty() ? "<leaf>" : op, checked,
                       fast ? "random directions (fast mode)" : "elements", input,
                       input_name.empty() ? "" : " '" + input_name + "'",
                       fast ? "along its direction" : "at " + shape_str(index), analytic, numeric, ratio);
}

std::ostream& operator<<(std::ostream& os, const GradcheckResult& r) { return os << r.message(); }

GradcheckResult gradcheck(const GradcheckFn& f, std::vector<Tensor> inputs, const GradcheckOptions& opt) {
    check_options("gradcheck", opt.eps, {{"atol", opt.atol}, {"rtol", opt.rtol}});
    KeepCallerState keep;
    bool any = false;
    for (const Tensor& t : inputs) any = any || t.requires_grad();
    if (!any)
        for (Tensor& t : inputs) keep.switch_on(t);

    // analytic: one backward with upstream gradient R, into .grad slots set aside for it
    Tensor y = f(inputs);
    keep.set_aside_grads(y);
    for (const Tensor& t : inputs) keep.set_aside_grads(t);
    Generator gen(opt.seed);
    const Array r = randn(y.shape(), gen).data();
    GradcheckResult res;
    res.op = y.grad_fn() ? y.grad_fn()->op() : "";
    if (!y.requires_grad()) fail("gradcheck: the function's output does not depend on any input that requires grad");
    y.backward(r);

    NoGradGuard no_grad;
    double worst = -1;
    const auto compare = [&](std::size_t i, std::vector<std::size_t> index, double a, double numeric) {
        const double ratio = std::abs(a - numeric) / (opt.atol + opt.rtol * std::abs(numeric));
        ++res.checked;
        if (ratio > worst || std::isnan(ratio)) {
            worst = std::isnan(ratio) ? INFINITY : ratio;
            res.input = i;
            res.input_name = inputs[i].name();
            res.index = std::move(index);
            res.analytic = a;
            res.numeric = numeric;
            res.ratio = worst;
        }
    };
    res.fast = opt.fast;
    Generator directions(opt.seed + 1);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        Tensor& x = inputs[i];
        if (!x.requires_grad()) continue;
        const Array analytic = x.has_grad() ? x.grad_array() : Array(xt::zeros<float>(x.shape()));
        float* p = x.mutable_ptr();
        const RestoreValues restore(x);
        if (opt.fast) {
            // x + eps u and x - eps u in float32; the analytic side uses the steps actually taken
            const Array u = randn(x.shape(), directions).data();
            const double norm = std::sqrt(xt::sum(xt::square(xt::cast<double>(u)))());
            const Array& kept = restore.kept();
            Array plus_x = kept, minus_x = kept;
            double a = 0;
            for (std::size_t j = 0; j < x.numel(); ++j) {
                const double step = opt.eps * u.data()[j] / (norm > 0 ? norm : 1);
                plus_x.data()[j] = static_cast<float>(kept.data()[j] + step);
                minus_x.data()[j] = static_cast<float>(kept.data()[j] - step);
                a += analytic.data()[j] * (static_cast<double>(plus_x.data()[j]) - minus_x.data()[j]);
            }
            std::copy(plus_x.begin(), plus_x.end(), p);
            const double plus = weighted_sum(f(inputs), r);
            std::copy(minus_x.begin(), minus_x.end(), p);
            const double minus = weighted_sum(f(inputs), r);
            compare(i, {}, a / (2 * opt.eps), (plus - minus) / (2 * opt.eps));
            continue;
        }
        for (std::size_t j = 0; j < x.numel(); ++j) {
            const float v = p[j];
            p[j] = static_cast<float>(v + opt.eps);
            const double plus = weighted_sum(f(inputs), r);
            p[j] = static_cast<float>(v - opt.eps);
            const double minus = weighted_sum(f(inputs), r);
            p[j] = v;
            // divide by the step actually taken in float32
            const double step = static_cast<double>(static_cast<float>(v + opt.eps)) -
                                static_cast<double>(static_cast<float>(v - opt.eps));
            compare(i, unravel(j, x.shape()), analytic.data()[j], (plus - minus) / step);
        }
    }
    res.passed = worst <= 1.0;
    return res;
}

GradcheckFn first_order_gradients(GradcheckFn f, std::uint64_t seed) {
    return [f = std::move(f), seed](const std::vector<Tensor>& x) {
        struct GradOn {  // gradcheck evaluates G under NoGradGuard; G needs its graph
            bool previous = is_grad_enabled();
            GradOn() { set_grad_enabled(true); }
            ~GradOn() { set_grad_enabled(previous); }
        } on;
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
    return gradcheck(first_order_gradients(f), std::move(inputs), options);
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
        res.op = y.grad_fn() ? y.grad_fn()->op() : "";
        forward = forward_ad::unpack_dual(y).tangent;
        if (!forward.defined()) forward = Tensor::zeros(y.shape());
    }
    const Tensor reference = func::jvp_by_double_backward(f, inputs, tangents).second;
    // finite differences along the tangents, in double from float32 evaluations
    NoGradGuard no_grad;
    const auto moved = [&](double sign) {
        std::vector<Tensor> x;
        for (std::size_t i = 0; i < inputs.size(); ++i)
            x.push_back(Tensor(Array(inputs[i].data() + static_cast<float>(sign * opt.eps) * tangents[i].data())));
        return f(x);
    };
    const Tensor plus = moved(1), minus = moved(-1);
    for (const Tensor* t : std::initializer_list<const Tensor*>{&forward, &reference, &plus, &minus})
        check_same_shape("jvpcheck", *t, y.shape());
    double worst = -1;
    for (std::size_t j = 0; j < forward.numel(); ++j) {
        const double a = forward.ptr()[j], ref = reference.ptr()[j];
        const double numeric =
            (static_cast<double>(plus.ptr()[j]) - static_cast<double>(minus.ptr()[j])) / (2 * opt.eps);
        double ratio = std::abs(a - numeric) / (opt.atol + opt.rtol * std::abs(numeric));
        const double ref_ratio = std::abs(a - ref) / (opt.reference_atol + opt.reference_rtol * std::abs(ref));
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
    res.passed = worst <= 1.0;
    return res;
}

}  // namespace xtgrad
