#include <xtgrad/optim/optimizer.hpp>

#include <xtgrad/optim/option_checks.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/speed_switches.hpp>
#include <xtgrad/simd/vector_kernels.hpp>
#include <xtgrad/threads/parallel.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace xtgrad::optim {

Adam::Adam(std::vector<Tensor> params, const AdamOptions& o, bool decoupled)
    : Optimizer(std::move(params), o.lr()), options(o), decoupled_(decoupled) {
    checks::check_options(o, decoupled ? "AdamW" : "Adam");
}

void Adam::check_step_options() const { checks::check_options(AdamOptions(options).lr(lr_), kind(), ".step"); }

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
        fail("optimizer state: betas must be two numbers, got {}", betas == g.end() ? "nothing" : checks::shown(*betas));
    o.betas({(*betas)[0].get<double>(), (*betas)[1].get<double>()});
    o.lr(checks::number_field(g, "lr"));
    o.eps(checks::number_field(g, "eps"));
    o.weight_decay(checks::number_field(g, "weight_decay"));
    if (checks::bool_field(g, "amsgrad", false)) fail("optimizer state: amsgrad is not implemented");
    if (checks::bool_field(g, "maximize", false)) fail("optimizer state: maximize is not implemented");
    checks::check_options(o, "optimizer state");
    options = o;
}

std::vector<std::string> Adam::required_state_keys(const nlohmann::json&) const { return state_keys(); }

std::vector<std::string> Adam::state_keys() const { return {"exp_avg", "exp_avg_sq"}; }

}  // namespace xtgrad::optim
