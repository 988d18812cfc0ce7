// The optimizer's step in backward (PyTorch's "optimizer step in backward" pattern, built on
// register_post_accumulate_grad_hook): each parameter is updated as soon as its gradient is
// complete, while the gradient is still in cache, instead of in a separate pass over every
// gradient after backward. For a memory-bound step (the Winter Games model: batch 1, 7 tokens)
// that pass, and zero_grad, are most of what it saves (docs/performance.md).
//
//   optim::Adam opt(model->parameters(), optim::AdamOptions(1e-3));
//   optim::OptimizerInBackward in_backward(opt);   // from here on, every backward steps
//   for (...) {
//       scheduler.step();                           // if any: the lr is read during backward
//       loss(model).backward();                     // no opt.zero_grad(), no opt.step()
//   }
//
// Each update is the one step() makes (the same step_parameter on the same gradient), so the
// parameters, Adam's moments and the step counts are bit for bit those of
// `opt.zero_grad(); loss.backward(); opt.step();` (tests/optim_in_backward_test.cpp). SGD,
// Adam and AdamW support it; ZeroRedundancyOptimizer (a collective step) does not.
//
// Where a parameter's gradient is one fp32 product (a Linear's weight, or a kernel-1 Conv1d's on
// one batch item) and nothing else could see it, the kernel hands it straight to the step with a
// proof that it is finite from the product's few operands, instead of the step scanning all of it
// (autograd/gradient_consumer.hpp): the same update; without a proof, the scan as always. Adam
// and AdamW take a 7-row product as its factors and make it inside their update, never stored.
//
// What is different (docs/architecture.md, "The step in backward"):
//   .grad      none after backward: dropped right after its parameter's step, so zero_grad costs
//              nothing and the next gradient reuses its memory, still in cache. keep_grad(true)
//              keeps it (this backward's gradient, to inspect); call opt.zero_grad() before the
//              next backward then, which otherwise would add into it (refused: an Error).
//   one backward, one step: no accumulation over several backwards; opt.step() is refused (it
//              would update twice); clip_grad_norm and grad_norm are refused (they need every
//              gradient before any step).
//   lr         read when each parameter's gradient completes: set it (an LRScheduler's step())
//              before backward, where step() would read it after.
//   errors     the checks (options, gradient shape and finiteness) run per parameter: an Error
//              stops the backward with this backward's earlier parameters updated and the rest not.
//   no gradient a parameter that gets none in a backward is skipped, as step() skips it.
//   state      state_dict / load_state_dict and checkpoints are the optimizer's, unchanged.
//   DDP        refused both ways: DistributedDataParallel's averaged gradients arrive after its
//              last bucket, so a step on each local gradient would be wrong.
// Other post-accumulate-grad hooks on the parameters run before the step and see the gradient.
// Destroying the object removes its hooks (step() works again); destroying the optimizer first
// removes them too.
#pragma once

#include <xtgrad/autograd/post_accumulate_hooks.hpp>
#include <xtgrad/nn/options.hpp>
#include <xtgrad/optim/optimizer.hpp>

#include <memory>
#include <vector>

namespace xtgrad::optim {

class InBackwardOptions {
public:
    // Keep each parameter's gradient in .grad after its step (false: drop it).
    XTGRAD_ARG(bool, keep_grad) = false;
};

class OptimizerInBackward {
public:
    // Registers one hook per parameter of `optimizer`. An Error (changing nothing) if the
    // optimizer has no per-parameter step, already steps in backward, shares a parameter with
    // another optimizer that does, or a parameter has DistributedDataParallel's hooks.
    explicit OptimizerInBackward(Optimizer& optimizer, const InBackwardOptions& options = InBackwardOptions());
    ~OptimizerInBackward();
    OptimizerInBackward(const OptimizerInBackward&) = delete;
    OptimizerInBackward& operator=(const OptimizerInBackward&) = delete;

    const InBackwardOptions& options() const { return options_; }

private:
    friend class Optimizer;
    friend class GradientToStep;
    void detach();  // removes the hooks and forgets the optimizer (its destructor calls this)
    bool checks_finite() const;  // the optimizer's set_check_finite
    // proven_finite: the gradient's kernel proved it finite (no NaN scan)
    void step(std::size_t index, TensorImpl& leaf, bool proven_finite = false);
    // The same step on a gradient handed over as its factors (proven finite); false where the
    // optimizer cannot take it so (SGD) or keep_grad wants it stored: then it is, and step() runs.
    bool step_product(std::size_t index, const vec::RankKGradient& gradient);

    Optimizer* optimizer_;
    InBackwardOptions options_;
    std::vector<PostAccumulateHookHandle> handles_;
    std::vector<std::weak_ptr<Array>> kept_;  // keep_grad: the .grad each parameter's last step left
    std::shared_ptr<OptimizerInBackward*> self_;  // the hooks' way back here; null once detached
};

}  // namespace xtgrad::optim
