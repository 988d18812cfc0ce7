#include <xtgrad/optim/schedule.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/io/bounded_json.hpp>
#include <xtgrad/optim/optimizer.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>

namespace xtgrad::optim {

namespace {

// An lr from a schedule: finite arguments can still overflow (gamma^k, factor · d_model^-0.5).
bool valid_lr(double lr) { return lr >= 0 && std::isfinite(lr); }

// A real argument of a schedule, checked when the schedule is built.
void check_argument(const char* who, const char* name, double value, bool positive = false) {
    if (!std::isfinite(value) || (positive ? !(value > 0) : !(value >= 0)))
        fail("{}: {} must be a finite number {} 0, got {}", who, name, positive ? ">" : ">=", value);
}

// The schedule a factory returns: steps count from 1, and every lr it gives is a valid one.
Schedule checked(const char* who, Schedule lr_at) {
    return [who, lr_at = std::move(lr_at)](long step) {
        if (step < 1) fail("{}: steps count from 1, got {}", who, step);
        const double lr = lr_at(step);
        if (!valid_lr(lr)) fail("{}: the lr at step {} is {}, not a finite number >= 0", who, step, lr);
        return lr;
    };
}

}  // namespace

Schedule noam_schedule(double d_model, long warmup, double factor) {
    if (warmup < 1) fail("noam_schedule: warmup must be >= 1, got {}", warmup);
    check_argument("noam_schedule", "d_model", d_model, /*positive=*/true);
    check_argument("noam_schedule", "factor", factor);
    return checked("noam_schedule", [=](long step) {
        const double s = static_cast<double>(step);
        return factor * std::pow(d_model, -0.5) * std::min(std::pow(s, -0.5), s * std::pow(static_cast<double>(warmup), -1.5));
    });
}

Schedule linear_warmup(double base_lr, long warmup) {
    if (warmup < 0) fail("linear_warmup: warmup must be >= 0, got {}", warmup);
    check_argument("linear_warmup", "base_lr", base_lr);
    return checked("linear_warmup", [=](long step) {
        return step >= warmup ? base_lr : base_lr * static_cast<double>(step) / static_cast<double>(warmup);
    });
}

Schedule step_decay(double base_lr, long step_size, double gamma) {
    if (step_size < 1) fail("step_decay: step_size must be >= 1, got {}", step_size);
    check_argument("step_decay", "base_lr", base_lr);
    check_argument("step_decay", "gamma", gamma);  // torch's StepLR takes any; a negative one flips the lr's sign
    return checked("step_decay", [=](long step) { return base_lr * std::pow(gamma, static_cast<double>((step - 1) / step_size)); });
}

LRScheduler::LRScheduler(Optimizer& optimizer, Schedule schedule) : optimizer_(optimizer), schedule_(std::move(schedule)) {
    if (!schedule_) fail("LRScheduler: the schedule is empty");
}

void LRScheduler::step() {
    if (last_step_ >= kMaxStep)
        fail("LRScheduler.step: the scheduler is at step {}, the last it counts to", last_step_);
    const long next = last_step_ + 1;
    const double lr = schedule_(next);  // a program's own schedule is checked here, the factories' in them too
    if (!valid_lr(lr))
        fail("LRScheduler.step: the schedule gave lr {} for step {}, not a finite number >= 0; the optimizer's lr "
             "stays {} and the scheduler at step {}", lr, next, optimizer_.lr(), last_step_);
    optimizer_.set_lr(lr);
    last_step_ = next;
}

std::string LRScheduler::state_dict() const {
    nlohmann::json j;
    j["last_epoch"] = last_step_;
    j["_step_count"] = last_step_ + 1;
    j["_last_lr"] = {optimizer_.lr()};
    return j.dump();
}

namespace {

constexpr int kMaxStateNesting = 4;  // a valid state nests 2 deep: the object, _last_lr

// At most 80 characters of a value from the state, for messages.
std::string state_value(const nlohmann::json& v) { return v.dump().substr(0, 80); }

}  // namespace

void LRScheduler::load_state_dict(const std::string& text) {
    nlohmann::json j;
    try {
        j = xtgrad::detail::parse_bounded_json(text, {kMaxStateNesting}, "LRScheduler: the state");
    } catch (const nlohmann::json::exception& e) {
        fail("LRScheduler: a state must be JSON ({})", std::string(e.what()).substr(0, 200));
    }
    if (!j.is_object()) fail("LRScheduler: a state must be a JSON object with last_epoch and _last_lr, got {}", state_value(j));
    // nlohmann reads a JSON integer >= 0 as unsigned; a fraction, an exponent or a sign is not one
    const auto last = j.find("last_epoch");
    if (last == j.end() || !last->is_number_unsigned() || last->get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxStep))
        fail("LRScheduler: last_epoch must be a whole number in [0, {}], got {}", kMaxStep,
             last == j.end() ? "nothing" : state_value(*last));
    const auto lr = j.find("_last_lr");
    if (lr == j.end() || !lr->is_array() || lr->size() != 1 || !(*lr)[0].is_number() || !valid_lr((*lr)[0].get<double>()))
        fail("LRScheduler: _last_lr must be a list of one finite number >= 0, got {}", lr == j.end() ? "nothing" : state_value(*lr));
    optimizer_.set_lr((*lr)[0].get<double>());  // checked above: cannot throw after a change
    last_step_ = last->get<long>();
}

}  // namespace xtgrad::optim
