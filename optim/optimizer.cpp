#include <xtgrad/optim/optimizer.hpp>

#include <xtgrad/optim/in_backward.hpp>

#include <xtgrad/autograd/anomaly.hpp>
#include <xtgrad/autograd/speed_switches.hpp>
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/io/bounded_json.hpp>
#include <xtgrad/threads/parallel.hpp>
#include <xtgrad/simd/vector_kernels.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_set>

namespace xtgrad::optim {

namespace {
// Every lr an optimizer takes (constructor, set_lr, a loaded state, a step): torch takes 0; NaN,
// Inf or a negative one makes the parameters NaN or moves them uphill. `call` follows `who` in the
// message (".step"): formatted only on failure, as a step in backward checks once per parameter.
void check_lr(double lr, const char* who, const char* call = "") {
    if (!(lr >= 0) || !std::isfinite(lr)) fail("{}{}: lr must be a finite number >= 0, got {}", who, call, lr);
}
}  // namespace

Optimizer::Optimizer(std::vector<Tensor> params, double lr) : lr_(lr) {
    check_lr(lr, "optimizer");
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

Optimizer::~Optimizer() {
    if (in_backward_ != nullptr) in_backward_->detach();
}

void Optimizer::set_lr(double lr) {
    check_lr(lr, kind(), ".set_lr");
    lr_ = lr;
}

// In backward, the parameters whose gradients completed earlier have already stepped.
const char* Optimizer::updated_so_far() const {
    return in_backward_ != nullptr ? "this backward's earlier parameters were updated, this one and the rest were not"
                                   : "nothing was updated";
}

void Optimizer::check_state(std::size_t i, const char* who) const {
    const Tensor& p = params_[i];
    const auto it = state_.find(p.impl());
    if (it == state_.end()) return;
    for (const auto& [key, buffer] : it->second.buffers)
        if (buffer.shape() != p.data().shape())
            fail("{}.step: parameter {} '{}' has shape {}, its state '{}' shape {}; {} (its data replaced by another "
                 "shape since its last step? load a state of this shape, or build a new optimizer)", who, i, p.name(),
                 shape_str(p.shape()), key, shape_str(buffer.shape()), updated_so_far());
}

void Optimizer::check_gradient(std::size_t i, const char* who, bool scan_finite) const {
    const Tensor& p = params_[i];
    if (!p.has_grad()) return;
    check_state(i, who);
    const char* updated = updated_so_far();
    const Array& g = p.grad_array();
    if (g.shape() != p.data().shape())
        fail("{}.step: the gradient of parameter {} '{}' has shape {}, the parameter has shape {}; {} (was .grad "
             "replaced through grad_array() or a hook?)", who, i, p.name(), shape_str(g.shape()),
             shape_str(p.shape()), updated);
    if (!check_finite_ || !scan_finite) return;
    const std::size_t bad = xtgrad::detail::first_non_finite(g.data(), g.size());
    if (bad != g.size())
        fail("{}.step: the gradient of parameter {} '{}' {} holds {} at element {}; {} (a NaN or infinite loss, or a "
             "backward that made one: set_anomaly_detection(true) finds the op)", who, i, p.name(),
             shape_str(p.shape()), g.data()[bad], bad, updated);
}

void Optimizer::check_gradients(const char* who) const {
    for (std::size_t i = 0; i < params_.size(); ++i) check_gradient(i, who);
}

void Optimizer::step_parameter(Tensor&) {
    fail("{}: has no per-parameter step (its step is one collective over every parameter)", kind());
}

bool Optimizer::step_parameter_product(Tensor&, const vec::RankKGradient&) { return false; }

void Optimizer::step_each() {
    if (in_backward_ != nullptr)
        fail("{}.step: this optimizer steps in backward (an OptimizerInBackward on it is alive), so every parameter "
             "with a gradient was already updated; calling step() too would update them twice. Drop the step() call, "
             "or destroy the OptimizerInBackward to step after backward again", kind());
    check_step_options();
    check_gradients(kind());
    for (Tensor& p : params_)
        if (p.has_grad()) step_parameter(p);
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

// A loaded buffer's values: a NaN or Inf moment stays one and reaches the parameter at the next
// step; a negative exp_avg_sq (a mean of squares) has no square root.
void check_state_values(const std::string& name, std::size_t i, const Array& a, bool non_negative) {
    const std::size_t bad = xtgrad::detail::first_non_finite(a.data(), a.size());
    if (bad != a.size())
        fail("optimizer state: '{}' (parameter {}) holds {} at element {}; a moment must be finite", name, i, a.data()[bad], bad);
    if (!non_negative) return;
    const float* negative = std::find_if(a.data(), a.data() + a.size(), [](float v) { return v < 0; });
    if (negative != a.data() + a.size())
        fail("optimizer state: '{}' (parameter {}) holds {} at element {}; it is a mean of squares, >= 0", name, i,
             *negative, negative - a.data());
}

// torch keeps step as a float32 tensor: exact up to 2^24 steps
constexpr long kMaxExactStep = 1L << 24;

// param_groups is a file's text: parsed with a bound on its nesting (a valid one nests 3 deep:
// list, group, betas), since json's dump() and destructor recurse and a 200 000-deep list would
// overflow the stack, and with nlohmann's exceptions turned into Errors.
constexpr int kMaxParamGroupsNesting = 8;

nlohmann::json parse_param_groups(const std::string& text) {
    try {
        return xtgrad::detail::parse_bounded_json(text, kMaxParamGroupsNesting, "optimizer state: param_groups");
    } catch (const nlohmann::json::exception& e) {
        fail("optimizer state: param_groups is not JSON ({})", std::string(e.what()).substr(0, 200));
    }
}

// A value of the group as text for a message: short, whatever the file holds.
std::string shown(const nlohmann::json& v) { return v.dump().substr(0, 80); }

double number_field(const nlohmann::json& group, const char* key) {
    const auto it = group.find(key);
    if (it == group.end()) fail("optimizer state: the param group has no '{}'", key);
    if (!it->is_number()) fail("optimizer state: the param group's '{}' must be a number, got {}", key, shown(*it));
    const double v = it->get<double>();
    if (!std::isfinite(v)) fail("optimizer state: the param group's '{}' must be finite, got {}", key, v);
    return v;
}

bool bool_field(const nlohmann::json& group, const char* key, bool missing) {
    const auto it = group.find(key);
    if (it == group.end()) return missing;
    if (!it->is_boolean()) fail("optimizer state: the param group's '{}' must be true or false, got {}", key, shown(*it));
    return it->get<bool>();
}

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
    const nlohmann::json groups = parse_param_groups(in.param_groups);
    if (!groups.is_array() || groups.size() != 1 || !groups[0].is_object())
        fail("optimizer state: param_groups must be a list of one group, got {}", shown(groups));
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
            check_state_values(name, i, a, non_negative_state(key));
            s.buffers[key] = a;
        } else {
            fail("optimizer state: unexpected entry '{}' (this optimizer keeps step, {})", name, fmt::join(keys, ", "));
        }
    }
    const double lr = number_field(group, "lr");
    check_lr(lr, "optimizer state");
    const std::vector<std::string> required = required_state_keys(group);
    for (const auto& [i, s] : states) {
        if (s.step == 0) fail("optimizer state: parameter {} has buffers but no 'state.{}.step'", i, i);
        // A parameter that took steps without its moments would resume from zeros: a different run.
        for (const std::string& key : required)
            if (s.buffers.count(key) == 0)
                fail("optimizer state: parameter {} took {} steps but 'state.{}.{}' is missing", i, s.step, i, key);
    }
    read_options(group);  // checks every hyperparameter before it changes one
    lr_ = lr;
    state_.clear();
    for (auto& [i, s] : states) state_[params_[i].impl()] = std::move(s);
}

namespace {
// torch.optim.SGD's checks, for the constructor and for a loaded state alike.
void check_options(const SGDOptions& o, const char* who, const char* call = "") {
    check_lr(o.lr(), who, call);
    if (!(o.momentum() >= 0) || !std::isfinite(o.momentum()))
        fail("{}{}: momentum must be a finite number >= 0, got {}", who, call, o.momentum());
    if (!std::isfinite(o.dampening())) fail("{}{}: dampening must be finite, got {}", who, call, o.dampening());
    if (!(o.weight_decay() >= 0) || !std::isfinite(o.weight_decay()))
        fail("{}{}: weight_decay must be a finite number >= 0, got {}", who, call, o.weight_decay());
    if (o.nesterov() && (o.momentum() <= 0 || o.dampening() != 0))
        fail("{}{}: nesterov needs momentum > 0 and dampening 0 (got momentum {}, dampening {})", who, call, o.momentum(),
             o.dampening());
}

// torch.optim.Adam's checks.
void check_options(const AdamOptions& o, const char* who, const char* call = "") {
    check_lr(o.lr(), who, call);
    if (!(o.betas().first >= 0 && o.betas().first < 1 && o.betas().second >= 0 && o.betas().second < 1))
        fail("{}{}: betas must be in [0, 1), got ({}, {})", who, call, o.betas().first, o.betas().second);
    if (!(o.eps() >= 0) || !std::isfinite(o.eps())) fail("{}{}: eps must be a finite number >= 0, got {}", who, call, o.eps());
    if (!(o.weight_decay() >= 0) || !std::isfinite(o.weight_decay()))
        fail("{}{}: weight_decay must be a finite number >= 0, got {}", who, call, o.weight_decay());
}
}  // namespace

SGD::SGD(std::vector<Tensor> params, const SGDOptions& o) : Optimizer(std::move(params), o.lr()), options(o) {
    check_options(o, "SGD");
}

// The step's lr is lr_ (set_lr keeps it checked); options.lr() is not read by a step.
void SGD::check_step_options() const { check_options(SGDOptions(options).lr(lr_), kind(), ".step"); }

void SGD::step_parameter(Tensor& p) {
    const float lr = static_cast<float>(lr_), mom = static_cast<float>(options.momentum()),
                one_minus_damp = static_cast<float>(1 - options.dampening()), wd = static_cast<float>(options.weight_decay());
    ParamState& s = state_of(p);
    float* w = p.mutable_ptr();
    const float* g = p.grad_array().data();
    const std::size_t n = p.numel();
    float* buf = mom != 0 ? buffer(s, "momentum_buffer", p).data() : nullptr;
    const bool first = s.step == 0;
    for (std::size_t i = 0; i < n; ++i) {
        float gi = g[i] + wd * w[i];
        if (buf) {
            buf[i] = first ? gi : mom * buf[i] + one_minus_damp * gi;
            gi = options.nesterov() ? gi + mom * buf[i] : buf[i];
        }
        w[i] -= lr * gi;
    }
    ++s.step;
}

void SGD::write_options(nlohmann::json& g) const {
    g["momentum"] = options.momentum();
    g["dampening"] = options.dampening();
    g["weight_decay"] = options.weight_decay();
    g["nesterov"] = options.nesterov();
    g["maximize"] = false;
}

void SGD::read_options(const nlohmann::json& g) {
    SGDOptions o = options;
    o.lr(number_field(g, "lr"));
    o.momentum(number_field(g, "momentum"));
    o.dampening(number_field(g, "dampening"));
    o.weight_decay(number_field(g, "weight_decay"));
    o.nesterov(bool_field(g, "nesterov", false));
    if (bool_field(g, "maximize", false)) fail("optimizer state: maximize is not implemented");
    check_options(o, "optimizer state");
    options = o;
}

std::vector<std::string> SGD::required_state_keys(const nlohmann::json& g) const {
    if (number_field(g, "momentum") == 0) return {};  // plain SGD keeps no buffer
    return {"momentum_buffer"};
}

std::vector<std::string> SGD::state_keys() const { return {"momentum_buffer"}; }

Adam::Adam(std::vector<Tensor> params, const AdamOptions& o, bool decoupled)
    : Optimizer(std::move(params), o.lr()), options(o), decoupled_(decoupled) {
    check_options(o, decoupled ? "AdamW" : "Adam");
}

void Adam::check_step_options() const { check_options(AdamOptions(options).lr(lr_), kind(), ".step"); }

// On one thread the update asks for its lines 2 KiB ahead (XTGRAD_ADAM_PREFETCH, unset the CPU's
// default: speed_switches.cpp, on but on the Zen 4). On two threads, which share the memory, the
// step in backward lost (56.8 -> 66.6 ms at 2 KiB; 512 B: 54.5): never.
namespace {
bool adam_prefetch_on() { return detail::speed_switch_on(detail::kAdamPrefetchSwitch); }
}  // namespace

vec::AdamCoefficients Adam::next_step(ParamState& s) const {
    const double b1 = options.betas().first, b2 = options.betas().second;
    const long t = ++s.step;
    // scalars in double, as torch computes them in Python floats
    const double bc1 = 1 - std::pow(b1, static_cast<double>(t)), bc2 = 1 - std::pow(b2, static_cast<double>(t));
    // 1 - β in double, then rounded: (1 - 0.999f) would be 1.3e-5 off torch's 0.001f
    return {.b1 = static_cast<float>(b1),
            .one_minus_b1 = static_cast<float>(1 - b1),
            .b2 = static_cast<float>(b2),
            .one_minus_b2 = static_cast<float>(1 - b2),
            .l2 = decoupled_ ? 0.f : static_cast<float>(options.weight_decay()),
            .decay = decoupled_ ? static_cast<float>(1 - lr_ * options.weight_decay()) : 1.f,
            .step_size = static_cast<float>(lr_ / bc1),
            .inv_sqrt_bc2 = static_cast<float>(1 / std::sqrt(bc2)),
            .eps = static_cast<float>(options.eps())};
}

struct Adam::Update {
    vec::AdamCoefficients c;
    float* w;
    float* m;
    float* v;
    std::size_t ahead;  // bytes
};

Adam::Update Adam::begin_update(Tensor& p) {
    const bool adam_prefetch = adam_prefetch_on();  // first: a bad XTGRAD_ADAM_PREFETCH changes nothing
    ParamState& s = state_of(p);
    float* m = buffer(s, "exp_avg", p).data();
    float* v = buffer(s, "exp_avg_sq", p).data();
    const vec::AdamCoefficients c = next_step(s);
    return {.c = c, .w = p.mutable_ptr(), .m = m, .v = v,
            .ahead = num_threads() == 1 && adam_prefetch ? vec::kAdamPrefetchBytes : 0};
}

void Adam::step_parameter(Tensor& p) {
    const Update u = begin_update(p);
    const float* g = p.grad_array().data();
    // One fused, in-place pass; big parameters split over xtgrad's threads (set_num_threads).
    parallel_for(p.numel(), std::size_t{1} << 16, [&](std::size_t i0, std::size_t i1) {
        vec::adam_update(u.c, u.w + i0, g + i0, u.m + i0, u.v + i0, i1 - i0, u.ahead);
    });
}

// The same update, its gradient made row by row from its factors (vec::adam_update_product), the
// rows split over xtgrad's threads as step_parameter splits the elements.
bool Adam::step_parameter_product(Tensor& p, const vec::RankKGradient& gradient) {
    if (!vec::adam_update_product_pays(gradient)) return false;  // a wide row: stored is faster
    if (gradient.rows * gradient.cols != p.numel())
        fail("{}.step: parameter '{}' {} was handed a ({}, {}) gradient (an internal error)", kind(), p.name(),
             shape_str(p.shape()), gradient.rows, gradient.cols);
    const Update u = begin_update(p);
    const std::size_t grain_rows = std::max<std::size_t>(1, (std::size_t{1} << 16) / std::max<std::size_t>(gradient.cols, 1));
    parallel_for(gradient.rows, grain_rows, [&](std::size_t r0, std::size_t r1) {
        vec::adam_update_product(u.c, u.w, u.m, u.v, gradient, r0, r1, u.ahead);
    });
    return true;
}

void Adam::write_options(nlohmann::json& g) const {
    g["betas"] = {options.betas().first, options.betas().second};
    g["eps"] = options.eps();
    g["weight_decay"] = options.weight_decay();
    g["amsgrad"] = false;
    g["maximize"] = false;
}

void Adam::read_options(const nlohmann::json& g) {
    AdamOptions o = options;
    const auto betas = g.find("betas");
    if (betas == g.end() || !betas->is_array() || betas->size() != 2 || !(*betas)[0].is_number() ||
        !(*betas)[1].is_number())
        fail("optimizer state: betas must be two numbers, got {}", betas == g.end() ? "nothing" : shown(*betas));
    o.betas({(*betas)[0].get<double>(), (*betas)[1].get<double>()});
    o.lr(number_field(g, "lr"));
    o.eps(number_field(g, "eps"));
    o.weight_decay(number_field(g, "weight_decay"));
    if (bool_field(g, "amsgrad", false)) fail("optimizer state: amsgrad is not implemented");
    if (bool_field(g, "maximize", false)) fail("optimizer state: maximize is not implemented");
    check_options(o, "optimizer state");
    options = o;
}

std::vector<std::string> Adam::required_state_keys(const nlohmann::json&) const { return state_keys(); }

std::vector<std::string> Adam::state_keys() const { return {"exp_avg", "exp_avg_sq"}; }

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
