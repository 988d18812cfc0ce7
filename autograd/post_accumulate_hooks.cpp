#include <xtgrad/autograd/post_accumulate_hooks.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/tensor.hpp>

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <vector>

namespace xtgrad {

namespace {

struct Hook {
    std::uint64_t id;
    std::string owner;
    bool last;
    std::function<void(TensorImpl&)> fn;
    std::shared_ptr<GradientConsumer> consumer;
};

struct Entry {
    std::weak_ptr<TensorImpl> leaf;  // an address can be reused once its impl is gone
    std::vector<Hook> hooks;         // in running order: the `last` ones at the end
};

std::unordered_map<const TensorImpl*, Entry>& registry() {
    static std::unordered_map<const TensorImpl*, Entry> r;
    return r;
}

std::uint64_t next_id = 1;
std::size_t hooks_with_consumers = 0;  // live hooks registered with a consumer

// The leaf's live entry, or null (none, or one left by a leaf that is gone).
Entry* entry_of(const TensorImpl* leaf) {
    const auto it = registry().find(leaf);
    if (it == registry().end() || it->second.leaf.lock().get() != leaf) return nullptr;
    return &it->second;
}

}  // namespace

PostAccumulateHookHandle register_post_accumulate_grad_hook(const Tensor& leaf, std::function<void(TensorImpl&)> hook,
                                                            const PostAccumulateHookOptions& options) {
    if (!leaf.defined() || !leaf.requires_grad() || !leaf.is_leaf())
        fail("register_post_accumulate_grad_hook: '{}' must be a leaf that requires grad",
             leaf.defined() ? leaf.name() : std::string("(undefined)"));
    if (!hook) fail("register_post_accumulate_grad_hook: the hook on '{}' is empty (a default-constructed std::function)", leaf.name());
    std::erase_if(registry(), [](const auto& kv) {
        if (!kv.second.leaf.expired()) return false;
        for (const Hook& h : kv.second.hooks) hooks_with_consumers -= h.consumer != nullptr;
        return true;
    });
    Entry& e = registry()[leaf.impl()];
    e.leaf = leaf.graph_ptr();
    // A hook without `last` goes before the first `last` one; a `last` one at the end.
    const auto at = options.last ? e.hooks.end()
                                   : std::find_if(e.hooks.begin(), e.hooks.end(), [](const Hook& h) { return h.last; });
    const std::uint64_t id = next_id++;
    e.hooks.insert(at, Hook{id, options.owner, options.last, std::move(hook), options.consumer});
    hooks_with_consumers += options.consumer != nullptr;
    return PostAccumulateHookHandle(leaf.impl(), id);
}

void PostAccumulateHookHandle::remove() {
    if (leaf_ == nullptr) return;
    if (Entry* e = entry_of(leaf_))
        std::erase_if(e->hooks, [&](const Hook& h) {
            if (h.id != id_) return false;
            hooks_with_consumers -= h.consumer != nullptr;
            return true;
        });
    leaf_ = nullptr;
}

bool has_post_accumulate_grad_hook(const Tensor& leaf, const std::string& owner) {
    const Entry* e = leaf.defined() ? entry_of(leaf.impl()) : nullptr;
    return e != nullptr && std::any_of(e->hooks.begin(), e->hooks.end(), [&](const Hook& h) { return h.owner == owner; });
}

namespace detail {

void run_post_accumulate_grad_hooks(TensorImpl& leaf) {
    if (registry().empty()) return;
    const Entry* e = entry_of(&leaf);
    if (e == nullptr || e->hooks.empty()) return;
    // A copy: a hook that registers or removes a hook changes (and may move) the list being walked.
    const std::vector<Hook> hooks = e->hooks;
    for (const Hook& hook : hooks)
        call_user_hook([&] { hook.fn(leaf); },
                       [&] {
                           return leaf.name.empty() ? fmt::format("register_post_accumulate_grad_hook: a hook on a leaf {}",
                                                                  shape_str(leaf.shape()))
                                                    : fmt::format("register_post_accumulate_grad_hook: a hook on '{}'", leaf.name);
                       });
}

bool post_accumulate_consumers_registered() { return hooks_with_consumers != 0; }

GradientConsumer* post_accumulate_consumer(const TensorImpl& leaf) {
    const Entry* e = entry_of(&leaf);
    return e != nullptr && e->hooks.size() == 1 ? e->hooks.front().consumer.get() : nullptr;
}

}  // namespace detail

}  // namespace xtgrad
