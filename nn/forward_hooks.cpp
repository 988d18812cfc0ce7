#include <xtgrad/nn/forward_hooks.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/nn/module.hpp>

#include <cxxabi.h>

#include <algorithm>

#include <cstdlib>
#include <exception>
#include <typeinfo>

namespace xtgrad::nn {

namespace {

thread_local const Module* running_forward = nullptr;  // innermost module forward on this thread

template <class Hooks>
void erase_id(Hooks& hooks, std::uint64_t id) {
    std::erase_if(hooks, [id](const auto& entry) { return entry.first == id; });
}

// Runs one hook; whatever it throws becomes an Error naming the module and the kind of hook.
template <class Call>
void run_hook(const Module& module, const char* kind, Call&& call) {
    try {
        call();
    } catch (const std::exception& e) {
        throw Error(fmt::format("{} of module {} threw: {}", kind, module.describe(), e.what()));
    } catch (...) {
        throw Error(fmt::format("{} of module {} threw a non-standard exception", kind, module.describe()));
    }
}

}  // namespace

// ---- Module's side ----

HookHandle Module::register_forward_pre_hook(ForwardPreHook hook) {
    if (!hook) fail("register_forward_pre_hook: the hook of module {} is empty", describe());
    if (!hooks_) hooks_ = std::make_shared<detail::HookLists>();
    const std::uint64_t id = hooks_->next_id++;
    hooks_->pre.emplace_back(id, std::move(hook));
    return HookHandle(hooks_, id);
}

HookHandle Module::register_forward_hook(ForwardHook hook) {
    if (!hook) fail("register_forward_hook: the hook of module {} is empty", describe());
    if (!hooks_) hooks_ = std::make_shared<detail::HookLists>();
    const std::uint64_t id = hooks_->next_id++;
    hooks_->post.emplace_back(id, std::move(hook));
    return HookHandle(hooks_, id);
}

std::string Module::type_name() const {
    const char* mangled = typeid(*this).name();
    int status = 0;
    char* readable = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
    const std::string type = status == 0 && readable != nullptr ? readable : mangled;
    std::free(readable);
    return type;
}

std::string Module::describe() const { return fmt::format("'{}' ({})", path().empty() ? "<root>" : path(), type_name()); }

// ---- HookHandle ----

HookHandle& HookHandle::operator=(HookHandle&& other) noexcept {
    if (this != &other) {
        remove();
        lists_ = std::move(other.lists_);
        id_ = std::exchange(other.id_, 0);
    }
    return *this;
}

void HookHandle::remove() {
    if (const std::shared_ptr<detail::HookLists> lists = lists_.lock()) {
        erase_id(lists->pre, id_);
        erase_id(lists->post, id_);
    }
    lists_.reset();
    id_ = 0;
}

bool HookHandle::active() const {
    const std::shared_ptr<detail::HookLists> lists = lists_.lock();
    if (!lists) return false;
    auto has = [&](const auto& hooks) {
        return std::any_of(hooks.begin(), hooks.end(), [&](const auto& entry) { return entry.first == id_; });
    };
    return has(lists->pre) || has(lists->post);
}

// ---- ForwardScope ----

ForwardScope::Running::Running(const Module& module) : enclosing(std::exchange(running_forward, &module)) {}
ForwardScope::Running::~Running() { running_forward = enclosing; }

ForwardScope::ForwardScope(const Module& module, const std::shared_ptr<detail::HookLists>& hooks,
                           std::vector<Tensor> inputs)
    : running_(module), path_(module.path().c_str()), module_(module), hooks_(hooks), inputs_(std::move(inputs)) {
    // A forward overload calling another of the same module (forward(q, k, v) -> forward(q, k, v,
    // mask)) is one forward: its hooks ran in the outer call.
    if (running_.enclosing == &module) hooks_.reset();
    if (!hooks_ || hooks_->pre.empty()) return;
    const auto pre = hooks_->pre;  // a copy: a hook may remove itself
    for (const auto& entry : pre) run_hook(module_, "forward pre-hook", [&] { entry.second(module_, inputs_); });
}

ForwardScope::~ForwardScope() = default;

void ForwardScope::run_forward_hooks(const std::vector<Tensor>& outputs) {
    if (hooks_->post.empty()) return;
    const auto post = hooks_->post;
    for (const auto& entry : post) run_hook(module_, "forward hook", [&] { entry.second(module_, inputs_, outputs); });
}

}  // namespace xtgrad::nn
