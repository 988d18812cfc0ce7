#include <xtgrad/autograd/post_accumulate_hooks.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/tensor.hpp>

#include <memory>
#include <unordered_map>
#include <vector>

namespace xtgrad {

namespace {

struct Entry {
    std::weak_ptr<TensorImpl> leaf;  // an address can be reused once its impl is gone
    std::vector<std::function<void(TensorImpl&)>> hooks;
};

std::unordered_map<const TensorImpl*, Entry>& registry() {
    static std::unordered_map<const TensorImpl*, Entry> r;
    return r;
}

}  // namespace

void register_post_accumulate_grad_hook(const Tensor& leaf, std::function<void(TensorImpl&)> hook) {
    if (!leaf.defined() || !leaf.requires_grad() || !leaf.is_leaf())
        fail("register_post_accumulate_grad_hook: '{}' must be a leaf that requires grad",
             leaf.defined() ? leaf.name() : std::string("(undefined)"));
    std::erase_if(registry(), [](const auto& kv) { return kv.second.leaf.expired(); });
    Entry& e = registry()[leaf.impl()];
    e.leaf = leaf.graph_ptr();
    e.hooks.push_back(std::move(hook));
}

namespace detail {

void run_post_accumulate_grad_hooks(TensorImpl& leaf) {
    auto& r = registry();
    if (r.empty()) return;
    const auto it = r.find(&leaf);
    if (it == r.end() || it->second.leaf.lock().get() != &leaf) return;
    // A copy: a hook that registers another hook grows (and may move) the registry being walked.
    const std::vector<std::function<void(TensorImpl&)>> hooks = it->second.hooks;
    for (const auto& hook : hooks) hook(leaf);
}

}  // namespace detail

}  // namespace xtgrad
