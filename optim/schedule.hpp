// Learning-rate schedules: lr as a function of the step (1, 2, 3, ...). Call
// `opt.set_lr(schedule(step))` before each opt.step().
#pragma once

#include <cmath>
#include <functional>

namespace xtgrad::optim {

using Schedule = std::function<double(long step)>;

// "Attention Is All You Need", section 5.3: d_model^-0.5 · min(step^-0.5, step · warmup^-1.5),
// times `factor`. Rises linearly for `warmup` steps, then decays as 1/sqrt(step).
Schedule noam_schedule(double d_model, long warmup, double factor = 1.0);

// base_lr · step / warmup for the first `warmup` steps, then base_lr.
Schedule linear_warmup(double base_lr, long warmup);

// base_lr · gamma^floor((step - 1) / step_size): multiply by gamma every step_size steps.
Schedule step_decay(double base_lr, long step_size, double gamma);

}  // namespace xtgrad::optim
