// Learning-rate schedules: lr as a function of the step (1, 2, 3, ...). Call
// `opt.set_lr(schedule(step))` before each opt.step(), or let an LRScheduler count the steps.
#pragma once

#include <cmath>
#include <functional>
#include <string>

namespace xtgrad::optim {

class Optimizer;

using Schedule = std::function<double(long step)>;

// "Attention Is All You Need", section 5.3: d_model^-0.5 · min(step^-0.5, step · warmup^-1.5),
// times `factor`. Rises linearly for `warmup` steps, then decays as 1/sqrt(step).
Schedule noam_schedule(double d_model, long warmup, double factor = 1.0);

// base_lr · step / warmup for the first `warmup` steps, then base_lr.
Schedule linear_warmup(double base_lr, long warmup);

// base_lr · gamma^floor((step - 1) / step_size): multiply by gamma every step_size steps.
Schedule step_decay(double base_lr, long step_size, double gamma);

// torch.optim.lr_scheduler.LambdaLR's role: holds the schedule's position, so a checkpoint can
// restore it. step() sets the optimizer's lr for the next step (call it before opt.step()).
class LRScheduler {
public:
    LRScheduler(Optimizer& optimizer, Schedule schedule);
    void step();                                  // last_step += 1; opt.set_lr(schedule(last_step))
    long last_step() const { return last_step_; }  // steps taken (0 before the first)

    // As torch's scheduler.state_dict(), JSON: {"last_epoch": n, "_step_count": n + 1,
    // "_last_lr": [lr]}; torch counts scheduler steps in "last_epoch" whatever a step means.
    // The schedule itself is code, not state: the program rebuilds it from its options.
    std::string state_dict() const;
    // Restores the position and the optimizer's lr; an Error on JSON that does not fit.
    void load_state_dict(const std::string& json);

private:
    Optimizer& optimizer_;
    Schedule schedule_;
    long last_step_ = 0;
};

}  // namespace xtgrad::optim
