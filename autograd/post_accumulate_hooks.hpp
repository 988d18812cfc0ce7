// Post-accumulate-grad hooks (torch's Tensor.register_post_accumulate_grad_hook): a hook on a
// leaf runs once per backward, after every contribution to the leaf's gradient of that backward
// has been added into its .grad (and its register_hook hooks have run). DistributedDataParallel
// launches its allreduce buckets from them (nn/parallel/distributed.hpp), and the optimizer's
// step in backward updates the parameter from them (optim/in_backward.hpp): a register_hook hook
// sees one incoming gradient, not the finished sum.
//
// Kept apart from the tensor (a registry keyed by the leaf, not a field of TensorImpl), so the
// engine's only change is one call. Register and remove outside backward, from one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace xtgrad {

class GradientConsumer;
class Tensor;
struct TensorImpl;

// The owners of the library's own hooks (PostAccumulateHookOptions::owner).
namespace hook_owner {
inline const std::string ddp = "DistributedDataParallel";
inline const std::string optimizer_in_backward = "the optimizer's step in backward";
}  // namespace hook_owner

// register_post_accumulate_grad_hook(leaf, hook, {.owner = "...", .last = true})
struct PostAccumulateHookOptions {
    // Who registered the hook, so that a feature that cannot share a leaf with another can ask
    // (has_post_accumulate_grad_hook) and refuse: the optimizer's step in backward and
    // DistributedDataParallel refuse each other.
    std::string owner;
    // Runs after the leaf's other hooks, whenever they were registered (the optimizer's step in
    // backward drops .grad: the others must see it first).
    bool last = false;
    // The hook's work on a gradient a kernel hands over itself (autograd/gradient_consumer.hpp),
    // for the library's own step in backward: while this is the leaf's only hook, a backward
    // kernel that can gives the gradient to the consumer, and the hook does not run that backward.
    std::shared_ptr<GradientConsumer> consumer = nullptr;
};

// What register_post_accumulate_grad_hook returns (torch's RemovableHandle): remove() takes the
// hook out; removing twice, or after the leaf is gone, does nothing. Dropping the handle keeps
// the hook (as torch), so a caller that never removes can ignore it.
class PostAccumulateHookHandle {
public:
    PostAccumulateHookHandle() = default;
    void remove();

private:
    friend PostAccumulateHookHandle register_post_accumulate_grad_hook(const Tensor&, std::function<void(TensorImpl&)>,
                                                                       const PostAccumulateHookOptions&);
    explicit PostAccumulateHookHandle(const TensorImpl* leaf, std::uint64_t id) : leaf_(leaf), id_(id) {}
    const TensorImpl* leaf_ = nullptr;
    std::uint64_t id_ = 0;
};

// leaf: a leaf that requires grad; hook(impl) reads impl.grad. Throws for anything else, or an
// empty hook.
PostAccumulateHookHandle register_post_accumulate_grad_hook(const Tensor& leaf, std::function<void(TensorImpl&)> hook,
                                                            const PostAccumulateHookOptions& options = {});

// Whether a hook registered with this owner is on the leaf.
bool has_post_accumulate_grad_hook(const Tensor& leaf, const std::string& owner);

namespace detail {
// Called by the engine when it reaches a leaf in backward order (its gradient complete).
void run_post_accumulate_grad_hooks(TensorImpl& leaf);
// Whether any hook with a consumer is registered (a quick test for the engine), and the leaf's
// consumer: that of its only hook, or null.
bool post_accumulate_consumers_registered();
GradientConsumer* post_accumulate_consumer(const TensorImpl& leaf);
}  // namespace detail

}  // namespace xtgrad
