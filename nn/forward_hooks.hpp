// Module forward hooks and forward pre-hooks: torch's register_forward_pre_hook /
// register_forward_hook, to look at the activations a module takes and makes.
//
//   std::vector<Tensor> seen;
//   auto handle = model.encoder_layers[0].register_forward_hook(
//       [&](const Module&, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) {
//           seen.push_back(outputs[0]);
//       });
//   model.forward(src, tgt);     // the hook ran once, for that layer's own forward
//   handle.remove();             // or let the handle go out of scope
//
// A module's forward opens a ForwardScope with its arguments and returns through it:
//   auto scope = enter(x, mask);     // pre-hooks run here, with the tensor inputs
//   ...
//   return scope.output(y);          // forward hooks run here, with the inputs and the outputs
// "Tensor inputs/outputs": the Tensor arguments in order, the elements of vectors, tuples and
// pairs of tensors, and the Tensor fields of output structs (EncoderLayerOutput{output, attn}
// gives {output, attn}); ids, masks and numbers are not tensors and are left out. Hooks look,
// they do not replace (torch's return-a-new-output form is not supported). Without hooks the
// scope costs what the module path scope always cost, plus one pointer test.
#pragma once

#include <xtgrad/autograd/grad_mode.hpp>
#include <xtgrad/autograd/tensor.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ranges>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace xtgrad::nn {

class Module;

using ForwardPreHook = std::function<void(const Module& module, const std::vector<Tensor>& inputs)>;
using ForwardHook = std::function<void(const Module& module, const std::vector<Tensor>& inputs,
                                       const std::vector<Tensor>& outputs)>;

namespace detail {

struct HookLists {
    std::vector<std::pair<std::uint64_t, ForwardPreHook>> pre;
    std::vector<std::pair<std::uint64_t, ForwardHook>> post;
    std::uint64_t next_id = 1;
    bool empty() const { return pre.empty() && post.empty(); }
};

// ---- the tensors of a forward's arguments and results ----

// Converts to any field type, in unevaluated braces only: counts an aggregate's fields.
struct AnyField {
    template <class T>
    operator T() const;  // NOLINT: implicit on purpose
};

template <class T, std::size_t... I>
constexpr bool braces_with(std::index_sequence<I...>) {
    return requires { T{(static_cast<void>(I), AnyField{})...}; };
}

// The number of fields of an aggregate (at most 6): the most AnyFields its braces accept.
template <class T, std::size_t N = 6>
constexpr std::size_t field_count() {
    if constexpr (N == 0 || braces_with<T>(std::make_index_sequence<N>{}))
        return N;
    else
        return field_count<T, N - 1>();
}

template <class T>
void collect_tensors(std::vector<Tensor>& out, const T& value);

// Calls collect_tensors on each field of an aggregate (EncoderLayerOutput, AttentionResult, ...).
template <class T>
void collect_fields(std::vector<Tensor>& out, const T& v) {
    constexpr std::size_t n = field_count<T>();
    static_assert(n <= 6, "forward hooks: an output struct of more than 6 fields; extend collect_fields");
    auto each = [&](const auto&... field) { (collect_tensors(out, field), ...); };
    if constexpr (n == 1) {
        const auto& [a] = v;
        each(a);
    } else if constexpr (n == 2) {
        const auto& [a, b] = v;
        each(a, b);
    } else if constexpr (n == 3) {
        const auto& [a, b, c] = v;
        each(a, b, c);
    } else if constexpr (n == 4) {
        const auto& [a, b, c, d] = v;
        each(a, b, c, d);
    } else if constexpr (n == 5) {
        const auto& [a, b, c, d, e] = v;
        each(a, b, c, d, e);
    } else if constexpr (n == 6) {
        const auto& [a, b, c, d, e, f] = v;
        each(a, b, c, d, e, f);
    }
}

template <class T>
concept TupleLike = requires { std::tuple_size<T>::value; };

template <class T>
void collect_tensors(std::vector<Tensor>& out, const T& value) {
    if constexpr (std::is_same_v<T, Tensor>) {
        out.push_back(value);
    } else if constexpr (std::is_pointer_v<T>) {
        if constexpr (std::is_same_v<std::remove_cv_t<std::remove_pointer_t<T>>, Tensor>)
            if (value != nullptr) out.push_back(*value);
    } else if constexpr (std::is_same_v<T, std::optional<Tensor>>) {
        if (value) out.push_back(*value);
    } else if constexpr (std::ranges::range<T>) {
        if constexpr (std::is_same_v<std::ranges::range_value_t<T>, Tensor>)
            for (const Tensor& t : value) out.push_back(t);
    } else if constexpr (TupleLike<T>) {
        std::apply([&](const auto&... item) { (collect_tensors(out, item), ...); }, value);
    } else if constexpr (std::is_aggregate_v<T>) {
        collect_fields(out, value);
    }  // anything else (Ids, Mask, numbers, masks' own classes) is not a tensor
}

template <class... Args>
std::vector<Tensor> tensors_of(const Args&... args) {
    std::vector<Tensor> out;
    (collect_tensors(out, args), ...);
    return out;
}

}  // namespace detail

// Unregisters its hook when destroyed or on remove() (torch's RemovableHandle, plus RAII);
// keep() lets the hook stay as long as the module lives.
class [[nodiscard]] HookHandle {
public:
    HookHandle() = default;
    HookHandle(std::weak_ptr<detail::HookLists> lists, std::uint64_t id) : lists_(std::move(lists)), id_(id) {}
    HookHandle(HookHandle&& other) noexcept : lists_(std::move(other.lists_)), id_(std::exchange(other.id_, 0)) {}
    HookHandle& operator=(HookHandle&& other) noexcept;
    HookHandle(const HookHandle&) = delete;
    HookHandle& operator=(const HookHandle&) = delete;
    ~HookHandle() { remove(); }

    void remove();                                // idempotent; harmless once the module is gone
    void keep() { lists_.reset(), id_ = 0; }      // the hook stays registered
    bool active() const;                          // registered and owned by this handle

private:
    std::weak_ptr<detail::HookLists> lists_;
    std::uint64_t id_ = 0;
};

// What Module::enter(inputs...) returns: the module path scope of the forward (traces, graphs and
// errors name the module), and its hooks.
class ForwardScope {
public:
    ForwardScope(const Module& module, const std::shared_ptr<detail::HookLists>& hooks, std::vector<Tensor> inputs);
    ~ForwardScope();
    ForwardScope(const ForwardScope&) = delete;
    ForwardScope& operator=(const ForwardScope&) = delete;

    // Runs the forward hooks on y's tensors, then returns y: `return scope.output(y);`
    template <class T>
    std::decay_t<T> output(T&& y) {
        if (hooks_) run_forward_hooks(detail::tensors_of(y));
        return std::forward<T>(y);
    }

private:
    void run_forward_hooks(const std::vector<Tensor>& outputs);

    // The module whose forward runs on this thread, restored when the scope ends (constructed
    // first, so a throwing pre-hook restores it too).
    struct Running {
        explicit Running(const Module& module);
        ~Running();
        Running(const Running&) = delete;
        Running& operator=(const Running&) = delete;
        const Module* enclosing;  // the forward that was running before this one
    };

    Running running_;
    ModuleScope path_;
    const Module& module_;
    std::shared_ptr<detail::HookLists> hooks_;   // null: no hooks to run (the common case)
    std::vector<Tensor> inputs_;
};

}  // namespace xtgrad::nn
