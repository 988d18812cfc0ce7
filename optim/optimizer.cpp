#include "optim/optimizer.hpp"

#include "autograd/error.hpp"

#include <cmath>

namespace xtgrad::optim {

Optimizer::Optimizer(std::vector<Tensor> params, double lr) : lr_(lr) {
    if (!(lr >= 0)) fail("optimizer: learning rate must be >= 0, got {}", lr);
    for (Tensor& p : params) {
        if (!p.defined()) fail("optimizer: a parameter is undefined");
        if (!p.is_leaf()) fail("optimizer: '{}' is not a leaf tensor (it is the output of {})", p.name(), p.grad_fn()->op());
        if (p.requires_grad()) params_.push_back(p);  // frozen tables are passed in by tutorials; skip them
    }
}

void Optimizer::zero_grad() {
    for (Tensor& p : params_) p.zero_grad();
}

Optimizer::ParamState& Optimizer::state_of(const Tensor& p) { return state_[p.impl()]; }

Array& Optimizer::buffer(ParamState& s, const std::string& key, const Tensor& like) {
    auto it = s.buffers.find(key);
    if (it == s.buffers.end()) it = s.buffers.emplace(key, Array(xt::zeros<float>(like.shape()))).first;
    return it->second;
}

const Array* Optimizer::state(const Tensor& p, const std::string& key) const {
    auto it = state_.find(p.impl());
    if (it == state_.end()) return nullptr;
    auto b = it->second.buffers.find(key);
    return b == it->second.buffers.end() ? nullptr : &b->second;
}

long Optimizer::step_count(const Tensor& p) const {
    auto it = state_.find(p.impl());
    return it == state_.end() ? 0 : it->second.step;
}

SGD::SGD(std::vector<Tensor> params, const SGDOptions& o) : Optimizer(std::move(params), o.lr), options(o) {
    if (o.nesterov && (o.momentum <= 0 || o.dampening != 0))
        fail("SGD: nesterov needs momentum > 0 and dampening 0 (got momentum {}, dampening {})", o.momentum, o.dampening);
}

void SGD::step() {
    const float lr = static_cast<float>(lr_), mom = static_cast<float>(options.momentum),
                one_minus_damp = static_cast<float>(1 - options.dampening), wd = static_cast<float>(options.weight_decay);
    for (Tensor& p : params_) {
        if (!p.has_grad()) continue;
        ParamState& s = state_of(p);
        float* w = p.ptr();
        const float* g = p.grad_array().data();
        const std::size_t n = p.numel();
        float* buf = mom != 0 ? buffer(s, "momentum_buffer", p).data() : nullptr;
        const bool first = s.step == 0;
        for (std::size_t i = 0; i < n; ++i) {
            float gi = g[i] + wd * w[i];
            if (buf) {
                buf[i] = first ? gi : mom * buf[i] + one_minus_damp * gi;
                gi = options.nesterov ? gi + mom * buf[i] : buf[i];
            }
            w[i] -= lr * gi;
        }
        ++s.step;
    }
}

Adam::Adam(std::vector<Tensor> params, const AdamOptions& o, bool decoupled)
    : Optimizer(std::move(params), o.lr), options(o), decoupled_(decoupled) {
    if (!(o.betas.first >= 0 && o.betas.first < 1 && o.betas.second >= 0 && o.betas.second < 1))
        fail("Adam: betas must be in [0, 1), got ({}, {})", o.betas.first, o.betas.second);
    if (!(o.eps >= 0)) fail("Adam: eps must be >= 0, got {}", o.eps);
}

void Adam::step() {
    const double b1 = options.betas.first, b2 = options.betas.second;
    for (Tensor& p : params_) {
        if (!p.has_grad()) continue;
        ParamState& s = state_of(p);
        const long t = ++s.step;
        // scalars in double, as torch computes them in Python floats
        const double bc1 = 1 - std::pow(b1, static_cast<double>(t)), bc2 = 1 - std::pow(b2, static_cast<double>(t));
        const float step_size = static_cast<float>(lr_ / bc1), inv_sqrt_bc2 = static_cast<float>(1 / std::sqrt(bc2));
        // 1 - β in double, then rounded: (1 - 0.999f) would be 1.3e-5 off torch's 0.001f
        const float fb1 = static_cast<float>(b1), fb2 = static_cast<float>(b2), eps = static_cast<float>(options.eps);
        const float one_minus_b1 = static_cast<float>(1 - b1), one_minus_b2 = static_cast<float>(1 - b2);
        const float l2 = decoupled_ ? 0.f : static_cast<float>(options.weight_decay);
        const float decay = decoupled_ ? static_cast<float>(1 - lr_ * options.weight_decay) : 1.f;
        float* w = p.ptr();
        const float* g = p.grad_array().data();
        float* m = buffer(s, "exp_avg", p).data();
        float* v = buffer(s, "exp_avg_sq", p).data();
        // one fused, in-place pass
        for (std::size_t i = 0, n = p.numel(); i < n; ++i) {
            const float gi = g[i] + l2 * w[i];
            m[i] = fb1 * m[i] + one_minus_b1 * gi;
            v[i] = fb2 * v[i] + one_minus_b2 * gi * gi;
            w[i] = w[i] * decay - step_size * m[i] / (std::sqrt(v[i]) * inv_sqrt_bc2 + eps);
        }
    }
}

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
    double sq = 0;
    for (const Tensor& p : params)
        if (p.has_grad())
            for (float g : p.grad_array()) sq += static_cast<double>(g) * g;
    const double norm = std::sqrt(sq);
    const double coef = max_norm / (norm + 1e-6);
    if (coef < 1)
        for (const Tensor& p : params)
            if (p.has_grad()) const_cast<Tensor&>(p).grad_array() *= static_cast<float>(coef);
    return norm;
}

}  // namespace xtgrad::optim
