#include <xtgrad/optim/optimizer.hpp>

#include <xtgrad/optim/option_checks.hpp>

#include <nlohmann/json.hpp>

namespace xtgrad::optim {

SGD::SGD(std::vector<Tensor> params, const SGDOptions& o) : Optimizer(std::move(params), o.lr()), options(o) {
    checks::check_options(o, "SGD");
}

// The step's lr is lr_ (set_lr keeps it checked); options.lr() is not read by a step.
void SGD::check_step_options() const { checks::check_options(SGDOptions(options).lr(lr_), kind(), ".step"); }

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
    o.lr(checks::number_field(g, "lr"));
    o.momentum(checks::number_field(g, "momentum"));
    o.dampening(checks::number_field(g, "dampening"));
    o.weight_decay(checks::number_field(g, "weight_decay"));
    o.nesterov(checks::bool_field(g, "nesterov", false));
    if (checks::bool_field(g, "maximize", false)) fail("optimizer state: maximize is not implemented");
    checks::check_options(o, "optimizer state");
    options = o;
}

std::vector<std::string> SGD::required_state_keys(const nlohmann::json& g) const {
    if (checks::number_field(g, "momentum") == 0) return {};  // plain SGD keeps no buffer
    return {"momentum_buffer"};
}

std::vector<std::string> SGD::state_keys() const { return {"momentum_buffer"}; }

}  // namespace xtgrad::optim
