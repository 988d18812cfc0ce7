// Grad mode: whether ops record the graph. Off inside a NoGradGuard (RAII, as
// torch.no_grad()), e.g. for optimizer steps and inference. With it off, a Linear layer may keep
// a transposed copy of its weight for the next forwards, where the CPU's products are faster so
// (one more copy of the weights while inferring, dropped by the next forward with grad mode on;
// XTGRAD_INFERENCE_WEIGHTS_TRANSPOSED=0 turns it off; docs/performance.md).
#pragma once

namespace xtgrad {

bool is_grad_enabled();
void set_grad_enabled(bool enabled);

// Grad mode set for a scope and put back when it ends (torch's AutoGradMode), in its two uses:
//   NoGradGuard       off, as torch.no_grad(): optimizer steps, inference
//   EnableGradGuard   on, as torch.enable_grad(): a check or transform that needs its graph
//                     (gradcheck's analytic pass, func::grad) records one inside a NoGradGuard too
class GradModeGuard {
public:
    explicit GradModeGuard(bool enabled) : previous_(is_grad_enabled()) { set_grad_enabled(enabled); }
    ~GradModeGuard() { set_grad_enabled(previous_); }
    GradModeGuard(const GradModeGuard&) = delete;
    GradModeGuard& operator=(const GradModeGuard&) = delete;

private:
    bool previous_;
};
class NoGradGuard : public GradModeGuard {
public:
    NoGradGuard() : GradModeGuard(false) {}
};
class EnableGradGuard : public GradModeGuard {
public:
    EnableGradGuard() : GradModeGuard(true) {}
};

// Module scope: the dotted path of the module whose forward is running ("encoder.layers.0.
// enc_self_attn"). Nodes record it so traces, graphs and errors say where an op came from.
const char* current_module_path();
class ModuleScope {
public:
    explicit ModuleScope(const char* path);
    ~ModuleScope();
    ModuleScope(const ModuleScope&) = delete;
    ModuleScope& operator=(const ModuleScope&) = delete;

private:
    const char* previous_;
};

}  // namespace xtgrad
