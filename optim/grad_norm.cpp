#include <xtgrad/optim/optimizer.hpp>

#include <xtgrad/optim/in_backward.hpp>

#include <xtgrad/autograd/anomaly.hpp>
#include <xtgrad/autograd/error.hpp>

#include <cmath>

namespace xtgrad::optim {

namespace {
void refuse_in_backward(const std::vector<Tensor>& params, const char* who) {
    for (const Tensor& p : params)
        if (has_post_accumulate_grad_hook(p, hook_owner::optimizer_in_backward))
            fail("{}: parameter '{}' steps in backward (OptimizerInBackward): each parameter is updated, and its gradient "
                 "used, as soon as that gradient is complete, before the others exist, so no norm of all the gradients "
                 "can come before the step. Step after backward (no OptimizerInBackward) to clip", who, p.name());
}
}  // namespace

double grad_norm(const std::vector<Tensor>& params) {
    refuse_in_backward(params, "grad_norm");
    double sq = 0;
    for (const Tensor& p : params)
        if (p.has_grad())
            for (float g : p.grad_array()) sq += static_cast<double>(g) * g;
    return std::sqrt(sq);
}

namespace {
// For clip_grad_norm's error_if_nonfinite message: the first parameter whose gradient is not finite.
std::string first_non_finite_gradient(const std::vector<Tensor>& params) {
    for (std::size_t i = 0; i < params.size(); ++i) {
        if (!params[i].has_grad()) continue;
        const Array& g = params[i].grad_array();
        const std::size_t bad = xtgrad::detail::first_non_finite(g.data(), g.size());
        if (bad != g.size())
            return fmt::format("parameter {} '{}' holds {} at element {}", i, params[i].name(), g.data()[bad], bad);
    }
    return "the sum of their squares overflows";
}
}  // namespace

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm, const ClipGradNormOptions& options) {
    refuse_in_backward(params, "clip_grad_norm");
    if (!(max_norm >= 0)) fail("clip_grad_norm: max_norm must be >= 0 (not NaN), got {}; no gradient was changed", max_norm);
    const double norm = grad_norm(params);
    if (options.error_if_nonfinite() && !std::isfinite(norm))
        fail("clip_grad_norm: the total norm of the gradients is {} ({}); error_if_nonfinite is set, so no gradient was "
             "changed", norm, first_non_finite_gradient(params));
    // torch's clamp(coef, max=1): a NaN norm gives a NaN coefficient, which scales too.
    const double coef = max_norm / (norm + 1e-6);
    if (!(coef >= 1))
        for (const Tensor& p : params)
            if (p.has_grad()) const_cast<Tensor&>(p).grad_array() *= static_cast<float>(coef);
    return norm;
}


}  // namespace xtgrad::optim
