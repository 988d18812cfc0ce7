// Post-accumulate-grad hooks (torch's Tensor.register_post_accumulate_grad_hook): a hook on a
// leaf runs once per backward, after every contribution to the leaf's gradient of that backward
// has been added into its .grad (and its register_hook hooks have run). DistributedDataParallel
// launches its allreduce buckets from them (nn/parallel/distributed.hpp): a register_hook hook
// sees one incoming gradient, not the finished sum.
//
// Kept apart from the tensor (a registry keyed by the leaf, not a field of TensorImpl), so the
// engine's only change is one call. Register outside backward, from one thread.
#pragma once

#include <functional>

namespace xtgrad {

class Tensor;
struct TensorImpl;

// leaf: a leaf that requires grad; hook(impl) reads impl.grad. Throws otherwise.
void register_post_accumulate_grad_hook(const Tensor& leaf, std::function<void(TensorImpl&)> hook);

namespace detail {
// Called by the engine when it reaches a leaf in backward order (its gradient complete).
void run_post_accumulate_grad_hooks(TensorImpl& leaf);
}  // namespace detail

}  // namespace xtgrad
