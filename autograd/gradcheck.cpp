#include "autograd/gradcheck.hpp"

#include "autograd/error.hpp"
#include "autograd/grad_mode.hpp"
#include "autograd/random.hpp"

#include <cmath>
#include <ostream>

namespace xtgrad {

namespace {

double weighted_sum(const Tensor& y, const Array& r) {
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

}  // namespace

std::string GradcheckResult::message() const {
    return fmt::format("gradcheck {} for {}: {} elements compared; worst: input {}{} at {}: analytic {:.6g}, "
                       "numeric {:.6g} ({:.3g}x the tolerance)",
                       passed ? "passed" : "FAILED", op.empty() ? "<leaf>" : op, checked, input,
                       input_name.empty() ? "" : " '" + input_name + "'", shape_str(index), analytic, numeric,
                       ratio);
}

std::ostream& operator<<(std::ostream& os, const GradcheckResult& r) { return os << r.message(); }

GradcheckResult gradcheck(const GradcheckFn& f, std::vector<Tensor> inputs, const GradcheckOptions& opt) {
    bool any = false;
    for (const Tensor& t : inputs) any = any || t.requires_grad();
    for (Tensor& t : inputs) {
        if (!any) t.requires_grad_(true);
        t.zero_grad();
    }

    // analytic: one backward with upstream gradient R
    Tensor y = f(inputs);
    Generator gen(opt.seed);
    const Array r = randn(y.shape(), gen).data();
    GradcheckResult res;
    res.op = y.grad_fn() ? y.grad_fn()->op() : "";
    if (!y.requires_grad()) fail("gradcheck: the function's output does not depend on any input that requires grad");
    y.backward(r);

    NoGradGuard no_grad;
    double worst = -1;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        Tensor& x = inputs[i];
        if (!x.requires_grad()) continue;
        const Array analytic = x.has_grad() ? x.grad_array() : Array(xt::zeros<float>(x.shape()));
        float* p = x.mutable_ptr();
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
            const double numeric = (plus - minus) / step;
            const double a = analytic.data()[j];
            const double ratio = std::abs(a - numeric) / (opt.atol + opt.rtol * std::abs(numeric));
            ++res.checked;
            if (ratio > worst || std::isnan(ratio)) {
                worst = std::isnan(ratio) ? INFINITY : ratio;
                res.input = i;
                res.input_name = x.name();
                res.index = unravel(j, x.shape());
                res.analytic = a;
                res.numeric = numeric;
                res.ratio = worst;
            }
        }
    }
    res.passed = worst <= 1.0;
    return res;
}

}  // namespace xtgrad
