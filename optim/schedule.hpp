// Learning-rate schedules: lr as a function of the step (1, 2, 3, ...). Call
// `opt.set_lr(schedule(step))` before each opt.step(), or let an LRScheduler count the steps.
// Each factory checks its arguments when it builds the schedule (finite, in range: an Error naming
// the factory and the argument), and the schedule checks each lr it gives: one that overflows
// (step_decay's gamma^k past the doubles) is an Error naming the factory and the step.
#pragma once

#include <cmath>
#include <functional>
#include <string>

namespace xtgrad::optim {

class Optimizer;

using Schedule = std::function<double(long step)>;

// "Attention Is All You Need", section 5.3: d_model^-0.5 · min(step^-0.5, step · warmup^-1.5),
// times `factor` (d_model > 0, factor >= 0). Rises linearly for `warmup` steps, then decays as 1/sqrt(step).
Schedule noam_schedule(double d_model, long warmup, double factor = 1.0);

// base_lr · step / warmup for the first `warmup` steps, then base_lr (base_lr >= 0, warmup >= 0).
Schedule linear_warmup(double base_lr, long warmup);

// base_lr · gamma^floor((step - 1) / step_size): multiply by gamma every step_size steps
// (base_lr >= 0, step_size >= 1, gamma >= 0: torch's StepLR takes a negative gamma, an lr < 0).
Schedule step_decay(double base_lr, long step_size, double gamma);

// torch.optim.lr_scheduler.LambdaLR's role: holds the schedule's position, so a checkpoint can
// restore it. step() sets the optimizer's lr for the next step (call it before opt.step()).
class LRScheduler {
public:
    // The most steps a scheduler counts: the largest whole number a JSON reader holding numbers
    // as doubles keeps exactly, far past any run, and step()'s + 1 stays clear of overflow.
    static constexpr long kMaxStep = 1L << 53;

    LRScheduler(Optimizer& optimizer, Schedule schedule);
    // last_step += 1; opt.set_lr(schedule(last_step)). A schedule's lr that is NaN, infinite or
    // negative (a program's own schedule can give one) is an Error naming the step, and neither
    // the optimizer's lr nor last_step changes.
    void step();
    long last_step() const { return last_step_; }  // steps taken (0 before the first)

    // As torch's scheduler.state_dict(), JSON: {"last_epoch": n, "_step_count": n + 1,
    // "_last_lr": [lr]}; torch counts scheduler steps in "last_epoch" whatever a step means.
    // The schedule itself is code, not state: the program rebuilds it from its options.
    std::string state_dict() const;
    // Restores the position and the optimizer's lr; an Error naming the field, changing nothing, on
    // JSON that does not fit: last_epoch must be a whole number in [0, kMaxStep] (not 2.7 or
    // 1e30), _last_lr a list of one finite number >= 0.
    void load_state_dict(const std::string& json);

private:
    Optimizer& optimizer_;
    Schedule schedule_;
    long last_step_ = 0;
};

}  // namespace xtgrad::optim
