// Module: the base of every layer, as torch.nn.Module / torch::nn::Module.
//
// A module registers its parameters, buffers and children *by name*; the names compose
// into the dotted paths of PyTorch's state_dict, so a tutorial's
//   encoder.layers.0.enc_self_attn.W_Q.weight
// is the same string here, in named_parameters(), in checkpoints, in traces and in errors
// (every parameter tensor carries its dotted path as its name).
//
// Ordering follows torch: a module's own parameters, then its buffers, then its children
// in registration order, recursively.
#pragma once

#include <xtgrad/autograd/grad_mode.hpp>
#include <xtgrad/autograd/tensor.hpp>
#include <xtgrad/nn/forward_hooks.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace xtgrad::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Module {
public:
    Module() = default;
    virtual ~Module() = default;
    Module(const Module&) = delete;
    Module& operator=(const Module&) = delete;

    // The dotted path of this module from the root ("" for the root itself).
    const std::string& path() const { return path_; }
    // "encoder.layers.0" + "." + name, or just name at the root.
    std::string child_path(const std::string& name) const;

    // Trainable and frozen parameters (as torch); a tensor registered twice (weight tying, a
    // shared child) comes once, under its first key.
    NamedTensors named_parameters() const;
    std::vector<Tensor> parameters() const;
    NamedTensors named_buffers() const;
    // Parameters and buffers in torch's order, every key: a tied tensor under each of its names.
    // Keys come from the registration tree (never from the tensors' names, which are for traces).
    NamedTensors state_dict() const;
    std::size_t num_parameters() const;  // number of scalar values in parameters()
    std::vector<std::pair<std::string, Module*>> named_children() const;

    // Copies values into the module's tensors by name. strict: the names must match
    // exactly; otherwise unknown names are ignored and missing ones left as they are.
    // Shapes must always match. Errors list the missing keys, unexpected keys and shape
    // mismatches at once (the first 10 of each, then how many more; names escaped).
    void load_state_dict(const NamedTensors& state, bool strict = true);

    void train(bool on = true);
    void eval() { train(false); }
    bool is_training() const { return training_; }
    void zero_grad();

    // Forward hooks (nn/forward_hooks.hpp, torch's register_forward_pre_hook/_hook): called with
    // this module and the tensors its forward takes (pre), and makes (forward hook), for this
    // module's own forward only. The handle unregisters the hook when it goes (or on remove());
    // handle.keep() leaves it registered. Hooks run in registration order; an exception from one
    // becomes an Error naming the module.
    HookHandle register_forward_pre_hook(ForwardPreHook hook);
    HookHandle register_forward_hook(ForwardHook hook);
    bool has_forward_hooks() const { return hooks_ && !hooks_->empty(); }
    // "xtgrad::nn::tutorial_b::EncoderLayer": the dynamic type, demangled.
    std::string type_name() const;
    // "'encoder_layers.0' (xtgrad::nn::tutorial_b::EncoderLayer)": how hooks' errors name a module.
    std::string describe() const;

protected:
    // Registration (call in constructors). A parameter is a leaf that requires grad
    // unless `trainable` is false (a frozen parameter, e.g. Embedding.from_pretrained).
    // As in torch, a name is non-empty, has no '.', and is not already a parameter, buffer or
    // child of this module: anything else is an Error, and nothing is registered.
    Tensor register_parameter(const std::string& name, Tensor t, bool trainable = true);
    Tensor register_buffer(const std::string& name, Tensor t);
    template <class M>
    std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
        attach_child(name, m);
        return m;
    }

    // Opens the forward: marks ops run in its scope as coming from this module (traces, graphs,
    // anomaly errors) and runs the forward pre-hooks with the tensor inputs. Use in forward:
    //   auto scope = enter(x, mask);  ...  return scope.output(y);   // forward hooks run there
    template <class... Inputs>
    [[nodiscard]] ForwardScope enter(const Inputs&... inputs) const {
        if (!has_forward_hooks()) return ForwardScope(*this, nullptr, {});
        return ForwardScope(*this, hooks_, detail::tensors_of(inputs...));
    }
    // Only the module path, no hooks: for methods other than forward (encode(), greedy_decode()).
    [[nodiscard]] ModuleScope path_scope() const { return ModuleScope(path_.c_str()); }

    // Hook for modules that keep state derived from training mode.
    virtual void on_train(bool) {}

private:
    void attach_child(const std::string& name, std::shared_ptr<Module> child);
    void check_new_name(const std::string& name, const char* what) const;
    void set_path(std::string path);  // renames the whole subtree
    bool contains(const Module& m) const;  // m is a module of this one's subtree (not itself)
    void collect(NamedTensors& out, bool params, bool buffers, bool unique) const;

    std::string path_;
    bool training_ = true;
    NamedTensors params_;
    NamedTensors buffers_;
    std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
    std::shared_ptr<detail::HookLists> hooks_;  // created by the first register_forward_*hook
};

// ModuleList: children named "0", "1", ... (torch.nn.ModuleList).
template <class M = Module>
class ModuleList : public Module {
public:
    void push_back(std::shared_ptr<M> m) { items_.push_back(register_module(std::to_string(items_.size()), std::move(m))); }
    std::size_t size() const { return items_.size(); }
    M& operator[](std::size_t i) const {
        if (i >= items_.size())
            fail("ModuleList{}: index {} is out of range for {} modules", path().empty() ? "" : " '" + path() + "'", i,
                 items_.size());
        return *items_[i];
    }
    auto begin() const { return items_.begin(); }
    auto end() const { return items_.end(); }

private:
    std::vector<std::shared_ptr<M>> items_;
};

// Checks a condition of a module's input; throws an Error prefixed with the module path.
[[noreturn]] void module_error(const Module& m, const char* module_type, const std::string& what);

}  // namespace xtgrad::nn
