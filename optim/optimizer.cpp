#include <xtgrad/optim/optimizer.hpp>

#include <xtgrad/optim/in_backward.hpp>
#include <xtgrad/optim/option_checks.hpp>

#include <xtgrad/autograd/anomaly.hpp>
#include <xtgrad/autograd/speed_switches.hpp>
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/utf8_text.hpp>
#include <xtgrad/io/bounded_json.hpp>
#include <xtgrad/threads/parallel.hpp>
#include <xtgrad/simd/vector_kernels.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_set>

namespace xtgrad::optim {


Optimizer::Optimizer(std::vector<Tensor> params, double lr) : lr_(lr) {
    checks::check_lr(lr, "optimizer");
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
    checks::check_lr(lr, kind(), ".set_lr");
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

// A loaded buffer's values: a NaN or Inf moment stays one and reaches the parameter at the next
// step; a negative exp_avg_sq (a mean of squares) has no square root.
void check_state_values(const std::string& name, std::size_t i, const Array& a, bool non_negative) {
    const std::size_t bad = xtgrad::detail::first_non_finite(a.data(), a.size());
    if (bad != a.size())
        fail("optimizer state: '{}' (parameter {}) holds {} at element {}; a moment must be finite", checks::shown_name(name), i,
             a.data()[bad], bad);
    if (!non_negative) return;
    const float* negative = std::find_if(a.data(), a.data() + a.size(), [](float v) { return v < 0; });
    if (negative != a.data() + a.size())
        fail("optimizer state: '{}' (parameter {}) holds {} at element {}; it is a mean of squares, >= 0",
             checks::shown_name(name), i, *negative, negative - a.data());
}

// torch keeps step as a float32 tensor: every count is exact up to 2^24 (2^24 + 1 is not), so a
// checkpoint holds at most 2^24 steps a parameter
constexpr long kMaxExactStep = 1L << 24;

// param_groups is a file's text: parsed with a bound on its nesting (a valid one nests 3 deep:
// list, group, betas), since json's dump() and destructor recurse and a 200 000-deep list would
// overflow the stack, and with nlohmann's exceptions turned into Errors.
constexpr int kMaxParamGroupsNesting = 8;

nlohmann::json parse_param_groups(const std::string& text) {
    try {
        return xtgrad::detail::parse_bounded_json(text, {kMaxParamGroupsNesting}, "optimizer state: param_groups");
    } catch (const nlohmann::json::exception& e) {
        fail("optimizer state: param_groups is not JSON ({})", escaped_for_message(e.what(), false, 200));
    }
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
        if (it->second.step > kMaxExactStep)
            fail("optimizer state: parameter {} took {} steps, more than the {} (2^24) a state holds: torch keeps the step "
                 "count as float32, whose whole numbers are exact only up to there", i, it->second.step, kMaxExactStep);
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
        fail("optimizer state: param_groups must be a list of one group, got {}", checks::shown(groups));
    const nlohmann::json& group = groups[0];
    if (!group.contains("params") || !group["params"].is_array() || group["params"].size() != params_.size())
        fail("optimizer state: the saved group has {} parameters, this optimizer has {}",
             group.contains("params") && group["params"].is_array() ? group["params"].size() : 0, params_.size());
    std::map<std::size_t, ParamState> states;
    const std::vector<std::string> keys = state_keys();
    const std::set<std::string> allowed(keys.begin(), keys.end());
    for (const auto& [name, a] : in.tensors) {
        const std::string shown = checks::shown_name(name);
        const auto entry = checks::state_entry(name);
        if (!entry)
            fail("optimizer state: '{}' is not a 'state.<index>.<key>' entry with a numeric index as state_dict() "
                 "writes it (decimal digits, no sign, no leading zero)", shown);
        const auto& [i, key] = *entry;
        if (i >= params_.size()) fail("optimizer state: '{}' names parameter {}, this optimizer has {}", shown, i, params_.size());
        ParamState& s = states[i];
        if (key == "step") {
            const float step = a.size() == 1 ? a.data()[0] : -1.f;
            if (a.dimension() > 1 || !(step >= 1) || step != std::floor(step) || step > static_cast<float>(kMaxExactStep))
                fail("optimizer state: '{}' must be one whole number in [1, {}] (2^24: torch keeps it as float32, exact "
                     "up to there), got shape {} value {}", shown, kMaxExactStep, shape_str(a.shape()), step);
            if (s.step != 0) fail("optimizer state: '{}' is given twice", shown);
            s.step = static_cast<long>(step);
        } else if (allowed.count(key) != 0) {
            if (a.shape() != params_[i].data().shape())
                fail("optimizer state: '{}' has shape {}, parameter {} ('{}') has shape {}", shown, shape_str(a.shape()), i,
                     params_[i].name(), shape_str(params_[i].shape()));
            check_state_values(name, i, a, non_negative_state(key));
            if (!s.buffers.emplace(key, a).second) fail("optimizer state: '{}' is given twice", shown);
        } else {
            fail("optimizer state: unexpected entry '{}' (this optimizer keeps step, {})", shown, fmt::join(keys, ", "));
        }
    }
    const double lr = checks::number_field(group, "lr");
    checks::check_lr(lr, "optimizer state");
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

}  // namespace xtgrad::optim
