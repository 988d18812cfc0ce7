// Runners for the optimizer fixtures (docs/fixtures.md, section Optimizer cases): K steps of SGD, Adam or AdamW on
// three parameters with given gradients; parameters and state compared after every step.
// The training fixtures (section 7) are in cases_train.cpp.
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/optim/optimizer.hpp>
#include "tools/parity/module_runner.hpp"
#include "tools/parity/register_all.hpp"

#include <memory>

namespace xtgrad::parity {

namespace {

std::unique_ptr<optim::Optimizer> make_optimizer(const json& spec, const std::vector<Tensor>& params) {
    const std::string cls = spec.at("class");
    const json& h = spec.at("hyper");
    if (cls == "torch.optim.SGD")
        return std::make_unique<optim::SGD>(params, optim::SGDOptions(h.at("lr"))
                                                        .momentum(h.value("momentum", 0.0))
                                                        .dampening(h.value("dampening", 0.0))
                                                        .weight_decay(h.value("weight_decay", 0.0))
                                                        .nesterov(h.value("nesterov", false)));
    const optim::AdamOptions o = optim::AdamOptions(h.at("lr"))
                                     .betas({h.at("betas")[0], h.at("betas")[1]})
                                     .eps(h.at("eps"))
                                     .weight_decay(h.value("weight_decay", 0.0));
    if (h.value("amsgrad", false)) xtgrad::fail("parity: amsgrad is not supported");
    if (cls == "torch.optim.Adam") return std::make_unique<optim::Adam>(params, o);
    if (cls == "torch.optim.AdamW") return std::make_unique<optim::AdamW>(params, optim::AdamWOptions(o));
    xtgrad::fail("parity: unknown optimizer class '{}'", cls);
}

void run_optimizer_case(const Fixture& f, Report& r) {
    const json& spec = f.meta().at("optimizer");
    std::vector<std::string> names;
    std::vector<Tensor> params;
    for (const json& p : spec.at("params")) {
        names.push_back(p.at("name"));
        params.emplace_back(f.floats("param." + names.back()), true);
    }
    std::unique_ptr<optim::Optimizer> opt = make_optimizer(spec, params);
    const Tolerance tol = f.tolerance();
    const long steps = spec.at("steps");
    // Per-step lists must cover every step: indexing past one would read beyond the array.
    const json& lr_per_step = spec.at("lr_per_step");
    if (steps < 0 || !lr_per_step.is_array() || lr_per_step.size() < static_cast<std::size_t>(steps))
        xtgrad::fail("parity: optimizer.lr_per_step has {} entries for {} steps", lr_per_step.is_array() ? lr_per_step.size() : 0,
                     steps);
    for (const json& counts : spec.at("step_count_after_step"))
        if (!counts.is_array() || counts.size() < static_cast<std::size_t>(steps))
            xtgrad::fail("parity: optimizer.step_count_after_step has a list of {} entries for {} steps",
                         counts.is_array() ? counts.size() : 0, steps);
    for (long k = 1; k <= steps; ++k) {
        opt->set_lr(lr_per_step[static_cast<std::size_t>(k - 1)]);
        const std::string step = "step" + std::to_string(k);
        for (std::size_t i = 0; i < params.size(); ++i) {
            params[i].zero_grad();
            const std::string g = step + ".grad." + names[i];
            if (f.has(g)) params[i].backward(f.floats(g));  // a leaf: backward just sets its grad
        }
        opt->step();
        for (std::size_t i = 0; i < params.size(); ++i) {
            r.compare(step + ".param." + names[i], params[i].data(), f.floats(step + ".param." + names[i]), tol);
            for (const json& key : spec.at("state_keys")) {
                const std::string file = step + ".state." + key.get<std::string>() + "." + names[i];
                if (!f.has(file)) continue;
                const Array* s = opt->state(params[i], key);
                if (!s) r.fail(file, "the optimizer has no such state");
                else r.compare(file, *s, f.floats(file), tol);
            }
            const long want = spec.at("step_count_after_step").at(names[i])[k - 1];
            const bool counts_steps = spec.at("class") != "torch.optim.SGD";  // torch's SGD keeps no step
            if (counts_steps && opt->step_count(params[i]) != want)
                r.fail(step + ".step_count." + names[i], fmt::format("{} steps, torch {}", opt->step_count(params[i]), want));
        }
    }
}

}  // namespace

void register_optim_runners() {
    for (const char* id : {"adam", "adamw", "sgd_momentum"}) register_runner(id, run_optimizer_case);
}

}  // namespace xtgrad::parity
