#include <xtgrad/optim/in_backward.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/gradient_consumer.hpp>
#include <xtgrad/autograd/tensor.hpp>
#include <xtgrad/simd/vector_kernels.hpp>

namespace xtgrad::optim {

// The step of one parameter on a gradient its kernel hands over (autograd/gradient_consumer.hpp):
// the hook's work, with the kernel's proof of finiteness in place of the NaN scan.
class GradientToStep final : public GradientConsumer {
public:
    GradientToStep(std::weak_ptr<OptimizerInBackward*> self, std::size_t index) : self_(std::move(self)), index_(index) {}
    bool needs_finite() const override { return in_backward().checks_finite(); }
    void consume(TensorImpl& leaf, std::shared_ptr<Array> gradient) override {
        leaf.grad = std::move(gradient);
        in_backward().step(index_, leaf, /*proven_finite=*/true);
    }
    bool consume_product(TensorImpl&, const vec::RankKGradient& gradient) override {
        return in_backward().step_product(index_, gradient);
    }

private:
    OptimizerInBackward& in_backward() const {
        const auto me = self_.lock();
        if (!me || *me == nullptr || (*me)->optimizer_ == nullptr)
            fail("OptimizerInBackward: a gradient was handed to a step in backward that was removed");
        return **me;
    }
    std::weak_ptr<OptimizerInBackward*> self_;
    std::size_t index_;
};

OptimizerInBackward::OptimizerInBackward(Optimizer& optimizer, const InBackwardOptions& options)
    : optimizer_(&optimizer), options_(options) {
    const char* who = optimizer.kind();
    if (!optimizer.steps_per_parameter())
        fail("OptimizerInBackward: {} has no per-parameter step (a sharded optimizer steps every parameter in one "
             "collective), so it cannot step in backward", who);
    if (optimizer.in_backward_ != nullptr)
        fail("OptimizerInBackward: this {} already steps in backward (another OptimizerInBackward on it is alive); "
             "a second one would update every parameter twice", who);
    for (const Tensor& p : optimizer.params()) {
        if (has_post_accumulate_grad_hook(p, hook_owner::optimizer_in_backward))
            fail("OptimizerInBackward: parameter '{}' already steps in backward under another optimizer; a parameter "
                 "given to two optimizers would be updated twice", p.name());
        if (has_post_accumulate_grad_hook(p, hook_owner::ddp))
            fail("OptimizerInBackward: parameter '{}' is in a DistributedDataParallel, whose averaged gradients are "
                 "ready only after its last bucket; a step in backward would use this process's own gradient. Step "
                 "after backward", p.name());
    }
    self_ = std::make_shared<OptimizerInBackward*>(this);
    kept_.resize(optimizer.params().size());
    const std::weak_ptr<OptimizerInBackward*> self = self_;
    try {
        for (std::size_t i = 0; i < optimizer.params().size(); ++i)
            handles_.push_back(register_post_accumulate_grad_hook(
                optimizer.params()[i],
                [self, i](TensorImpl& leaf) {
                    if (const auto me = self.lock(); me && *me != nullptr) (*me)->step(i, leaf);
                },
                {.owner = hook_owner::optimizer_in_backward,
                 .last = true,
                 .consumer = std::make_shared<GradientToStep>(self, i)}));
    } catch (...) {  // a parameter frozen since the optimizer was built: leave no hook behind
        optimizer_ = nullptr;
        detach();
        throw;
    }
    optimizer.in_backward_ = this;
}

OptimizerInBackward::~OptimizerInBackward() { detach(); }

bool OptimizerInBackward::checks_finite() const { return optimizer_->check_finite_; }

void OptimizerInBackward::detach() {
    for (PostAccumulateHookHandle& h : handles_) h.remove();
    handles_.clear();
    if (self_) *self_ = nullptr;
    if (optimizer_ != nullptr) optimizer_->in_backward_ = nullptr;
    optimizer_ = nullptr;
}

// Runs as parameter `index`'s gradient completes in backward: the checks and the update step()
// would make, then .grad dropped (or kept).
void OptimizerInBackward::step(std::size_t index, TensorImpl& leaf, bool proven_finite) {
    Optimizer& opt = *optimizer_;
    Tensor& p = opt.params_[index];
    if (options_.keep_grad() && leaf.grad != nullptr && leaf.grad == kept_[index].lock())
        fail("OptimizerInBackward: parameter '{}' kept its gradient (keep_grad) and this backward added into it, so "
             "its step would use the sum of two backwards; call zero_grad() before each backward with keep_grad, or "
             "leave keep_grad off", p.name());
    opt.check_step_options();  // options changed since the last backward: refused before any update
    opt.check_gradient(index, opt.kind(), /*scan_finite=*/!proven_finite);
    opt.step_parameter(p);
    if (options_.keep_grad())
        kept_[index] = leaf.grad;
    else
        leaf.grad.reset();
}

// A gradient given as its factors: never stored, so there is no .grad to keep (keep_grad has it
// stored instead) and none to check but its size, which the optimizer checks.
bool OptimizerInBackward::step_product(std::size_t index, const vec::RankKGradient& gradient) {
    if (options_.keep_grad()) return false;
    optimizer_->check_step_options();
    optimizer_->check_state(index, optimizer_->kind());
    return optimizer_->step_parameter_product(optimizer_->params_[index], gradient);
}

}  // namespace xtgrad::optim
