#include "optim/optimizer.hpp"

#include "autograd/error.hpp"
#include "autograd/parallel.hpp"
#include "autograd/vector_kernels.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <set>
#include <unordered_set>

namespace xtgrad::optim {

Optimizer::Optimizer(std::vector<Tensor> params, double lr) : lr_(lr) {
    if (!(lr >= 0)) fail("optimizer: learning rate must be >= 0, got {}", lr);
    std::unordered_set<const TensorImpl*> seen;
    for (Tensor& p : params) {
        if (!p.defined()) fail("optimizer: a parameter is undefined");
        if (!seen.insert(p.impl()).second)
            fail("optimizer: '{}' {} is given twice (a tied or shared parameter?); pass each tensor once, "
                 "e.g. model.parameters(), which lists a tied tensor once", p.name(), shape_str(p.shape()));
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

namespace {

// "state.<i>.<key>" -> (i, key); i must be a plain decimal index
std::pair<std::size_t, std::string> split_state_name(const std::string& name) {
    const std::string prefix = "state.";
    const std::size_t dot = name.find('.', prefix.size());
    if (name.rfind(prefix, 0) != 0 || dot == std::string::npos || dot == prefix.size() || dot - prefix.size() > 9)
        fail("optimizer state: '{}' is not a 'state.<index>.<key>' entry", name);
    std::size_t index = 0;
    for (std::size_t k = prefix.size(); k < dot; ++k) {
        if (name[k] < '0' || name[k] > '9') fail("optimizer state: '{}' has no numeric parameter index", name);
        index = index * 10 + static_cast<std::size_t>(name[k] - '0');
    }
    return {index, name.substr(dot + 1)};
}

// torch keeps step as a float32 tensor: exact up to 2^24 steps
constexpr long kMaxExactStep = 1L << 24;

}  // namespace

OptimizerState Optimizer::state_dict() const {
    OptimizerState out;
    nlohmann::json group;
    group["lr"] = lr_;
    write_options(group);
    std::vector<std::size_t> indices(params_.size());
    for (std::size_t i = 0; i < params_.size(); ++i) indices[i] = i;
    group["params"] = indices;
    out.param_groups = nlohmann::json::array({group}).dump();
    for (std::size_t i = 0; i < params_.size(); ++i) {
        auto it = state_.find(params_[i].impl());
        if (it == state_.end() || it->second.step == 0) continue;
        if (it->second.step > kMaxExactStep) fail("optimizer state: step {} of parameter {} does not fit float32 exactly", it->second.step, i);
        out.tensors.emplace_back(fmt::format("state.{}.step", i), Array(static_cast<float>(it->second.step)));
        for (const std::string& key : state_keys()) {
            auto b = it->second.buffers.find(key);
            if (b != it->second.buffers.end()) out.tensors.emplace_back(fmt::format("state.{}.{}", i, key), b->second);
        }
    }
    return out;
}

void Optimizer::load_state_dict(const OptimizerState& in) {
    // Everything is checked on copies first, so a bad state changes nothing.
    nlohmann::json groups;
    try {
        groups = nlohmann::json::parse(in.param_groups);
    } catch (const nlohmann::json::exception& e) {
        fail("optimizer state: param_groups is not JSON ({})", e.what());
    }
    if (!groups.is_array() || groups.size() != 1 || !groups[0].is_object())
        fail("optimizer state: param_groups must be a list of one group, got {}", groups.dump().substr(0, 200));
    const nlohmann::json& group = groups[0];
    if (!group.contains("params") || !group["params"].is_array() || group["params"].size() != params_.size())
        fail("optimizer state: the saved group has {} parameters, this optimizer has {}",
             group.contains("params") && group["params"].is_array() ? group["params"].size() : 0, params_.size());
    std::map<std::size_t, ParamState> states;
    const std::vector<std::string> keys = state_keys();
    const std::set<std::string> allowed(keys.begin(), keys.end());
    for (const auto& [name, a] : in.tensors) {
        const auto [i, key] = split_state_name(name);
        if (i >= params_.size()) fail("optimizer state: '{}' names parameter {}, this optimizer has {}", name, i, params_.size());
        ParamState& s = states[i];
        if (key == "step") {
            const float step = a.size() == 1 ? a.data()[0] : -1.f;
            if (a.dimension() > 1 || !(step >= 1) || step != std::floor(step) || step > static_cast<float>(kMaxExactStep))
                fail("optimizer state: '{}' must be one whole number >= 1, got shape {} value {}", name, shape_str(a.shape()), step);
            s.step = static_cast<long>(step);
        } else if (allowed.count(key) != 0) {
            if (a.shape() != params_[i].data().shape())
                fail("optimizer state: '{}' has shape {}, parameter {} ('{}') has shape {}", name, shape_str(a.shape()), i,
                     params_[i].name(), shape_str(params_[i].shape()));
            s.buffers[key] = a;
        } else {
            fail("optimizer state: unexpected entry '{}' (this optimizer keeps step, {})", name, fmt::join(keys, ", "));
        }
    }
    for (const auto& [i, s] : states)
        if (s.step == 0) fail("optimizer state: parameter {} has buffers but no 'state.{}.step'", i, i);
    const double lr = group.value("lr", -1.0);
    if (!(lr >= 0)) fail("optimizer state: the group's lr must be a number >= 0, got {}", group.value("lr", nlohmann::json()).dump());
    try {
        read_options(group);
    } catch (const nlohmann::json::exception& e) {
        fail("optimizer state: the group's hyperparameters do not fit this optimizer ({})", e.what());
    }
    lr_ = lr;
    state_.clear();
    for (auto& [i, s] : states) state_[params_[i].impl()] = std::move(s);
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

void SGD::write_options(nlohmann::json& g) const {
    g["momentum"] = options.momentum;
    g["dampening"] = options.dampening;
    g["weight_decay"] = options.weight_decay;
    g["nesterov"] = options.nesterov;
    g["maximize"] = false;
}

void SGD::read_options(const nlohmann::json& g) {
    SGDOptions o = options;
    o.momentum = g.at("momentum").get<double>();
    o.dampening = g.at("dampening").get<double>();
    o.weight_decay = g.at("weight_decay").get<double>();
    o.nesterov = g.at("nesterov").get<bool>();
    options = o;
}

std::vector<std::string> SGD::state_keys() const { return {"momentum_buffer"}; }

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
        const vec::AdamCoefficients c{.b1 = static_cast<float>(b1),
                                      .one_minus_b1 = static_cast<float>(1 - b1),
                                      .b2 = static_cast<float>(b2),
                                      .one_minus_b2 = static_cast<float>(1 - b2),
                                      .l2 = decoupled_ ? 0.f : static_cast<float>(options.weight_decay),
                                      .decay = decoupled_ ? static_cast<float>(1 - lr_ * options.weight_decay) : 1.f,
                                      .step_size = step_size,
                                      .inv_sqrt_bc2 = inv_sqrt_bc2,
                                      .eps = static_cast<float>(options.eps)};
        float* w = p.ptr();
        const float* g = p.grad_array().data();
        float* m = buffer(s, "exp_avg", p).data();
        float* v = buffer(s, "exp_avg_sq", p).data();
        // one fused, in-place pass; big parameters split over xtgrad's threads (set_num_threads)
        parallel_for(p.numel(), std::size_t{1} << 16,
                     [&](std::size_t i0, std::size_t i1) {
                         vec::adam_update(c, w + i0, g + i0, m + i0, v + i0, i1 - i0);
                     });
    }
}

void Adam::write_options(nlohmann::json& g) const {
    g["betas"] = {options.betas.first, options.betas.second};
    g["eps"] = options.eps;
    g["weight_decay"] = options.weight_decay;
    g["amsgrad"] = false;
    g["maximize"] = false;
}

void Adam::read_options(const nlohmann::json& g) {
    AdamOptions o = options;
    const nlohmann::json& betas = g.at("betas");
    if (!betas.is_array() || betas.size() != 2) fail("optimizer state: betas must be two numbers, got {}", betas.dump());
    o.betas = {betas[0].get<double>(), betas[1].get<double>()};
    if (!(o.betas.first >= 0 && o.betas.first < 1 && o.betas.second >= 0 && o.betas.second < 1))
        fail("optimizer state: betas must be in [0, 1), got {}", betas.dump());
    o.eps = g.at("eps").get<double>();
    o.weight_decay = g.at("weight_decay").get<double>();
    if (g.value("amsgrad", false)) fail("optimizer state: amsgrad is not implemented");
    options = o;
}

std::vector<std::string> Adam::state_keys() const { return {"exp_avg", "exp_avg_sq"}; }

double grad_norm(const std::vector<Tensor>& params) {
    double sq = 0;
    for (const Tensor& p : params)
        if (p.has_grad())
            for (float g : p.grad_array()) sq += static_cast<double>(g) * g;
    return std::sqrt(sq);
}

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
    const double norm = grad_norm(params);
    const double coef = max_norm / (norm + 1e-6);
    if (coef < 1)
        for (const Tensor& p : params)
            if (p.has_grad()) const_cast<Tensor&>(p).grad_array() *= static_cast<float>(coef);
    return norm;
}

}  // namespace xtgrad::optim
