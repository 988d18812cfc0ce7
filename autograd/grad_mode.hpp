// Grad mode: whether ops record the graph. Off inside a NoGradGuard (RAII, as
// torch.no_grad()), e.g. for optimizer steps and inference. With it off, a Linear layer may keep
// a transposed copy of its weight for the next forwards, where the CPU's products are faster so
// (one more copy of the weights while inferring, dropped by the next forward with grad mode on;
// XTGRAD_INFERENCE_WEIGHTS_TRANSPOSED=0 turns it off; docs/performance.md).
#pragma once

namespace xtgrad {

bool is_grad_enabled();
void set_grad_enabled(bool enabled);

class NoGradGuard {
public:
    NoGradGuard() : previous_(is_grad_enabled()) { set_grad_enabled(false); }
    ~NoGradGuard() { set_grad_enabled(previous_); }
    NoGradGuard(const NoGradGuard&) = delete;
    NoGradGuard& operator=(const NoGradGuard&) = delete;

private:
    bool previous_;
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
