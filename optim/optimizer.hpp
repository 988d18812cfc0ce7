// Optimizers over a model's parameters (torch.optim): SGD, Adam, AdamW.
//
//   Adam opt(model.parameters(), AdamOptions(1e-4).betas({0.9, 0.98}).eps(1e-9));
//   opt.zero_grad(); loss.backward(); opt.step();
//
// Parameters without a gradient at a step are skipped entirely (value, state and step
// count unchanged), as torch does. Frozen parameters (requires_grad false) are ignored.
// SGD, Adam and AdamW can also step inside backward, each parameter as soon as its gradient is
// complete (OptimizerInBackward, optim/in_backward.hpp): bit for bit the same updates.
// Each step is one fused pass over each parameter, in place: no temporaries the size of
// a parameter (the step is memory-bound for the Winter Games model).
#pragma once

#include <xtgrad/autograd/tensor.hpp>
#include <xtgrad/nn/options.hpp>

#include <nlohmann/json_fwd.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace xtgrad::vec {
struct AdamCoefficients;  // simd/vector_kernels.hpp (internal): one step's scalars
struct RankKGradient;     // a gradient as its two factors
}  // namespace xtgrad::vec

namespace xtgrad::optim {

class OptimizerInBackward;

// An optimizer's state in the layout of PyTorch's optimizer.state_dict(), flattened for a
// safetensors file (docs/checkpoints.md):
//   tensors       "state.<i>.step" (0-d float32, as torch >= 1.12 keeps it), "state.<i>.exp_avg",
//                 "state.<i>.exp_avg_sq" (Adam, AdamW), "state.<i>.momentum_buffer" (SGD), where
//                 i numbers params() in order; only parameters that took a step have entries
//   param_groups  torch's param_groups list as JSON text: one group with the hyperparameters
//                 ("lr", "betas", "eps", "weight_decay", ...) and "params": [0, 1, ..., n-1]
// One difference from torch: params() holds only the parameters that require a gradient
// (frozen tables are skipped), so i counts those.
struct OptimizerState {
    std::vector<std::pair<std::string, Array>> tensors;
    std::string param_groups;
};

class Optimizer {
public:
    Optimizer(std::vector<Tensor> params, double lr);
    virtual ~Optimizer();
    Optimizer(const Optimizer&) = delete;  // an OptimizerInBackward points at this one
    Optimizer& operator=(const Optimizer&) = delete;

    virtual void step() = 0;
    void zero_grad();  // drops every parameter's gradient (set_to_none)

    double lr() const { return lr_; }
    // An Error naming the optimizer and the value, lr unchanged, unless lr is finite and >= 0 (torch
    // takes 0; NaN, Inf or a negative one would make every parameter NaN or move it uphill).
    void set_lr(double lr);

    // Before a step changes anything it checks every gradient: its shape must be its parameter's
    // (a .grad replaced through grad_array() or a hook could be any size), and it must hold no
    // NaN or ±Inf, which would turn the weights and Adam's moments into NaN for good. Either is
    // an Error naming the parameter, and no parameter is updated. The finiteness scan reads
    // every gradient once (~3 % of a Winter Games step); set_check_finite(false) skips it, as
    // torch does not check.
    void set_check_finite(bool on) { check_finite_ = on; }
    const std::vector<Tensor>& params() const { return params_; }

    // Per-parameter state, by torch's key names ("exp_avg", "exp_avg_sq",
    // "momentum_buffer"); null before the parameter's first step.
    const Array* state(const Tensor& param, const std::string& key) const;
    long step_count(const Tensor& param) const;  // steps this parameter took part in

    virtual OptimizerState state_dict() const;
    // Restores the per-parameter state and the hyperparameters (lr included, as torch does).
    // Throws an Error naming the entry at fault for a parameter count, index, key or shape that
    // does not fit this optimizer, an entry given twice or an index written as state_dict() never
    // writes it ("state.03.step"), a step count past 2^24, a buffer holding NaN or Inf, or a
    // negative exp_avg_sq (its square root is taken), and changes nothing then.
    virtual void load_state_dict(const OptimizerState& state);
    // The state this process holds, in state_dict()'s layout, for load_state_dict to put back
    // (nn::load_run's all or nothing). The same as state_dict() except for a sharded optimizer
    // (nn::parallel::ZeroRedundancyOptimizer), whose state_dict() is a collective's result.
    virtual OptimizerState local_state_dict() const { return state_dict(); }

protected:
    struct ParamState {
        long step = 0;
        std::map<std::string, Array> buffers;
    };
    ParamState& state_of(const Tensor& param);
    Array& buffer(ParamState& s, const std::string& key, const Tensor& like);  // zero-initialised on first use

    // The hyperparameters of the param group, as torch names them (lr is written by the base).
    virtual void write_options(nlohmann::json& group) const = 0;
    // Reads and checks every hyperparameter (an Error naming the field for a missing, mistyped or
    // out-of-range one) before it changes any.
    virtual void read_options(const nlohmann::json& group) = 0;
    virtual std::vector<std::string> state_keys() const = 0;    // the buffers a step keeps
    // The buffers a parameter that took a step must have, under the group's hyperparameters.
    virtual std::vector<std::string> required_state_keys(const nlohmann::json& group) const = 0;
    // Whether the buffer `key` holds only values >= 0 (Adam's exp_avg_sq, a mean of squares).
    virtual bool non_negative_state(const std::string& /*key*/) const { return false; }
    // The public options, which a program may change between steps, checked as the constructor
    // checks them, with the step's lr (an Error "<kind>.step: <option> ..."). Every step calls it
    // first, a step in backward once per parameter.
    virtual void check_step_options() const {}

    // Whether the update is one per parameter (step_parameter), which stepping in backward needs;
    // a sharded optimizer's step is a collective over every parameter at once.
    virtual bool steps_per_parameter() const { return false; }
    // One parameter's update from its .grad (present, of its shape, checked); step() and the step
    // in backward both make every update through it, so the two are bit-identical.
    virtual void step_parameter(Tensor& param);
    // The step in backward's update from a gradient given as its factors (proven finite, of the
    // parameter's size; autograd/gradient_consumer.hpp), with step_parameter's bits on the stored
    // product: true if this optimizer makes it, false (the default) to have the gradient stored.
    virtual bool step_parameter_product(Tensor& param, const vec::RankKGradient& gradient);
    virtual const char* kind() const { return "optimizer"; }  // for messages: "Adam", "AdamW", "SGD"

    void check_gradients(const char* who) const;
    // One parameter's part of it; scan_finite false skips the NaN scan (a gradient proven finite
    // by the kernel that made it: autograd/gradient_consumer.hpp).
    void check_gradient(std::size_t index, const char* who, bool scan_finite = true) const;
    // Its state's buffers have the parameter's shape (an Error if its data was replaced by another).
    void check_state(std::size_t index, const char* who) const;
    const char* updated_so_far() const;  // for messages: what a refused step has changed
    // step() of a per-parameter optimizer: the options and every gradient checked first, then
    // step_parameter on each parameter that has one. Refused while an OptimizerInBackward steps this optimizer.
    void step_each();

    std::vector<Tensor> params_;
    double lr_;

private:
    friend class OptimizerInBackward;
    std::map<const TensorImpl*, ParamState> state_;
    bool check_finite_ = true;
    OptimizerInBackward* in_backward_ = nullptr;  // the one stepping this optimizer in backward
};

// The optimizers' options follow the modules' convention (nn/options.hpp), as torch's C++
// frontend's do: required values as constructor arguments, the rest chained setters with torch's
// defaults.   SGDOptions(0.1).momentum(0.9).nesterov(true)
class SGDOptions {
public:
    explicit SGDOptions(double lr) : lr_(lr) {}  // torch.optim.SGD has no default lr either
    XTGRAD_ARG(double, lr);
    XTGRAD_ARG(double, momentum) = 0;
    XTGRAD_ARG(double, dampening) = 0;
    XTGRAD_ARG(double, weight_decay) = 0;
    XTGRAD_ARG(bool, nesterov) = false;
};

// buf = g (first step) or momentum·buf + (1 - dampening)·g;  d = g + momentum·buf (nesterov) or buf
// p -= lr · d;   g = grad + weight_decay·p
class SGD : public Optimizer {
public:
    SGD(std::vector<Tensor> params, const SGDOptions& options);
    void step() override { step_each(); }
    // May be changed between steps; each step checks it first (an Error naming the option, nothing
    // updated). The lr the steps use is lr() (set_lr), not options.lr().
    SGDOptions options;

protected:
    bool steps_per_parameter() const override { return true; }
    void step_parameter(Tensor& param) override;
    const char* kind() const override { return "SGD"; }
    void check_step_options() const override;
    void write_options(nlohmann::json& group) const override;
    void read_options(const nlohmann::json& group) override;
    std::vector<std::string> state_keys() const override;
    std::vector<std::string> required_state_keys(const nlohmann::json& group) const override;
};

using Betas = std::pair<double, double>;

// AdamOptions(1e-4).betas({0.9, 0.98}).eps(1e-9), and AdamWOptions the same with AdamW's default
// weight_decay, 1e-2 (torch's AdamW(params, lr=...) decays; Adam's default is 0). Tag tells them
// apart: AdamW takes AdamWOptions, so AdamW(params, AdamWOptions(1e-3)) keeps that default.
template <class Tag>
class AdamOptionsOf {
public:
    explicit AdamOptionsOf(double lr = 1e-3) : lr_(lr) {}
    // Adam's options from AdamW's (or back), field by field.
    template <class OtherTag>
    explicit AdamOptionsOf(const AdamOptionsOf<OtherTag>& o)
        : lr_(o.lr()), betas_(o.betas()), eps_(o.eps()), weight_decay_(o.weight_decay()) {}
    XTGRAD_ARG(double, lr);
    XTGRAD_ARG(Betas, betas) = {0.9, 0.999};
    XTGRAD_ARG(double, eps) = 1e-8;
    XTGRAD_ARG(double, weight_decay) = Tag::default_weight_decay;
};
struct AdamTag {
    static constexpr double default_weight_decay = 0;
};
struct AdamWTag {
    static constexpr double default_weight_decay = 1e-2;
};
using AdamOptions = AdamOptionsOf<AdamTag>;
using AdamWOptions = AdamOptionsOf<AdamWTag>;

// t += 1;  g = grad (+ weight_decay·p for Adam: L2 folded into the gradient)
// m = β1 m + (1-β1) g;   v = β2 v + (1-β2) g²
// p -= (lr / (1-β1^t)) · m / (sqrt(v) / sqrt(1-β2^t) + eps)
// AdamW instead decays the weight directly first: p *= 1 - lr·weight_decay.
class Adam : public Optimizer {
public:
    explicit Adam(std::vector<Tensor> params, const AdamOptions& options = AdamOptions(), bool decoupled_weight_decay = false);
    void step() override { step_each(); }
    AdamOptions options;  // as SGD's: checked by each step; the step's lr is lr()

protected:
    bool steps_per_parameter() const override { return true; }
    void step_parameter(Tensor& param) override;
    bool step_parameter_product(Tensor& param, const vec::RankKGradient& gradient) override;
    const char* kind() const override { return decoupled_ ? "AdamW" : "Adam"; }
    void check_step_options() const override;
    bool non_negative_state(const std::string& key) const override { return key == "exp_avg_sq"; }
    void write_options(nlohmann::json& group) const override;
    void read_options(const nlohmann::json& group) override;
    std::vector<std::string> state_keys() const override;
    std::vector<std::string> required_state_keys(const nlohmann::json& group) const override;

private:
    // The step's scalars, after counting it.
    vec::AdamCoefficients next_step(ParamState& s) const;
    // What step_parameter and step_parameter_product both need: the moments (made on the first
    // step), the counted step's scalars, the parameter for writing, the prefetch distance.
    struct Update;
    Update begin_update(Tensor& param);
    bool decoupled_;
};

class AdamW : public Adam {
public:
    explicit AdamW(std::vector<Tensor> params, const AdamWOptions& options = AdamWOptions())
        : Adam(std::move(params), AdamOptions(options), true) {}
};

class ClipGradNormOptions {
public:
    // torch's error_if_nonfinite: a NaN or infinite total norm is an Error naming it, and no
    // gradient changes. Off (torch's default): the gradients are scaled by max_norm / norm as
    // torch scales them, so an infinite norm leaves zeros (NaN where a gradient was infinite)
    // and a NaN norm leaves NaN everywhere; the optimizer's step then refuses them (set_check_finite).
    XTGRAD_ARG(bool, error_if_nonfinite) = false;
};

// Scales all gradients so that their joint L2 norm is at most max_norm; returns the norm
// before clipping (torch.nn.utils.clip_grad_norm_, norm_type 2). max_norm must be >= 0 (0 zeroes
// the gradients, +Inf leaves them) and not NaN: else an Error, nothing changed. Both refuse
// parameters stepped in backward (OptimizerInBackward): their gradients are used, and gone,
// before the last one exists.
double clip_grad_norm(const std::vector<Tensor>& params, double max_norm,
                      const ClipGradNormOptions& options = ClipGradNormOptions());

// The joint L2 norm of the gradients (in double; NaN or Inf if any gradient holds one).
double grad_norm(const std::vector<Tensor>& params);

}  // namespace xtgrad::optim
