#include <xtgrad/optim/schedule.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/optim/optimizer.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>

namespace xtgrad::optim {

namespace {
void check_step(long step, const char* who) {
    if (step < 1) fail("{}: steps count from 1, got {}", who, step);
}
}  // namespace

Schedule noam_schedule(double d_model, long warmup, double factor) {
    if (warmup < 1 || d_model <= 0) fail("noam_schedule: needs d_model > 0 and warmup >= 1, got {} and {}", d_model, warmup);
    return [=](long step) {
        check_step(step, "noam_schedule");
        const double s = static_cast<double>(step);
        return factor * std::pow(d_model, -0.5) * std::min(std::pow(s, -0.5), s * std::pow(static_cast<double>(warmup), -1.5));
    };
}

Schedule linear_warmup(double base_lr, long warmup) {
    if (warmup < 0) fail("linear_warmup: warmup must be >= 0, got {}", warmup);
    return [=](long step) {
        check_step(step, "linear_warmup");
        return step >= warmup ? base_lr : base_lr * static_cast<double>(step) / static_cast<double>(warmup);
    };
}

Schedule step_decay(double base_lr, long step_size, double gamma) {
    if (step_size < 1) fail("step_decay: step_size must be >= 1, got {}", step_size);
    return [=](long step) {
        check_step(step, "step_decay");
        return base_lr * std::pow(gamma, static_cast<double>((step - 1) / step_size));
    };
}

LRScheduler::LRScheduler(Optimizer& optimizer, Schedule schedule) : optimizer_(optimizer), schedule_(std::move(schedule)) {
    if (!schedule_) fail("LRScheduler: the schedule is empty");
}

void LRScheduler::step() {
    optimizer_.set_lr(schedule_(last_step_ + 1));
    ++last_step_;
}

std::string LRScheduler::state_dict() const {
    nlohmann::json j;
    j["last_epoch"] = last_step_;
    j["_step_count"] = last_step_ + 1;
    j["_last_lr"] = {optimizer_.lr()};
    return j.dump();
}

void LRScheduler::load_state_dict(const std::string& text) {
    long last = -1;
    double lr = -1;
    try {
        const nlohmann::json j = nlohmann::json::parse(text);
        last = j.at("last_epoch").get<long>();
        lr = j.at("_last_lr").at(0).get<double>();
    } catch (const nlohmann::json::exception& e) {
        fail("LRScheduler: a state must be JSON with last_epoch and _last_lr ({})", e.what());
    }
    if (last < 0 || !(lr >= 0)) fail("LRScheduler: last_epoch {} and lr {} must be >= 0", last, lr);
    last_step_ = last;
    optimizer_.set_lr(lr);
}

}  // namespace xtgrad::optim
