#include <xtgrad/nn/module.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/utf8_text.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <unordered_set>

namespace xtgrad::nn {

std::string Module::child_path(const std::string& name) const { return path_.empty() ? name : path_ + "." + name; }

// As torch's register_parameter / register_buffer / add_module: a name is one non-empty key
// without '.' (it composes into dotted paths: "fc.weight" beside a child "fc" would give two
// tensors one key) and names one thing (a second "weight" would be a key strict loading never fills).
void Module::check_new_name(const std::string& name, const char* what) const {
    const std::string& owner = path_.empty() ? "Module" : path_;
    if (name.empty()) fail("{}: a {} name must not be empty", owner, what);
    if (name.find('.') != std::string::npos)
        fail("{}: {} name '{}' must not contain '.' (register it in the child module it belongs to)", owner, what, name);
    const auto named = [&](const auto& list) {
        return std::any_of(list.begin(), list.end(), [&](const auto& entry) { return entry.first == name; });
    };
    const char* taken = named(params_) ? "parameter" : named(buffers_) ? "buffer" : named(children_) ? "child module" : nullptr;
    if (taken) fail("{}: cannot register {} '{}': a {} of that name exists", owner, what, name, taken);
}

Tensor Module::register_parameter(const std::string& name, Tensor t, bool trainable) {
    check_new_name(name, "parameter");
    if (!t.defined()) fail("{}: parameter '{}' is undefined", path_.empty() ? "Module" : path_, name);
    t.requires_grad_(trainable);
    t.set_name(child_path(name));
    params_.emplace_back(name, t);
    return t;
}

Tensor Module::register_buffer(const std::string& name, Tensor t) {
    check_new_name(name, "buffer");
    if (!t.defined()) fail("{}: buffer '{}' is undefined", path_.empty() ? "Module" : path_, name);
    t.set_name(child_path(name));
    buffers_.emplace_back(name, t);
    return t;
}

void Module::attach_child(const std::string& name, std::shared_ptr<Module> child) {
    check_new_name(name, "child module");
    if (!child) fail("{}: child module '{}' is null", path_.empty() ? "Module" : path_, name);
    // A module inside itself would make every walk of the tree endless (paths, parameters):
    // refused before anything is registered. The tree has no cycle yet, so this walk ends.
    if (child.get() == this || child->contains(*this))
        fail("{}: child module '{}' would contain the module itself (a cycle)", path_.empty() ? "Module" : path_, name);
    children_.emplace_back(name, child);
    child->set_path(child_path(name));
}

bool Module::contains(const Module& m) const {
    for (const auto& [name, c] : children_)
        if (c.get() == &m || c->contains(m)) return true;
    return false;
}

void Module::set_path(std::string path) {
    path_ = std::move(path);
    for (auto& [name, t] : params_) t.set_name(child_path(name));
    for (auto& [name, t] : buffers_) t.set_name(child_path(name));
    for (auto& [name, c] : children_) c->set_path(child_path(name));
}

// Keys relative to this module, built from the registration tree (child names joined by dots),
// never from the tensors' names. unique: each tensor once, under its first key, and each shared
// child once (torch's named_parameters); otherwise every key (torch's state_dict, which lists a
// tied weight under each of its names).
void Module::collect(NamedTensors& out, bool params, bool buffers, bool unique) const {
    std::unordered_set<const TensorImpl*> seen_tensors;
    std::unordered_set<const Module*> seen_modules;
    auto add = [&](const std::string& prefix, const NamedTensors& list) {
        for (const auto& [name, t] : list)
            if (!unique || seen_tensors.insert(t.impl()).second) out.emplace_back(prefix + name, t);
    };
    std::vector<std::pair<const Module*, std::string>> stack{{this, ""}};  // depth-first, children in order
    while (!stack.empty()) {
        auto [m, prefix] = std::move(stack.back());
        stack.pop_back();
        if (unique && !seen_modules.insert(m).second) continue;
        if (params) add(prefix, m->params_);
        if (buffers) add(prefix, m->buffers_);
        for (auto it = m->children_.rbegin(); it != m->children_.rend(); ++it)
            stack.emplace_back(it->second.get(), prefix + it->first + ".");
    }
}

NamedTensors Module::named_parameters() const {
    NamedTensors out;
    collect(out, true, false, true);
    return out;
}

std::vector<Tensor> Module::parameters() const {
    std::vector<Tensor> out;
    for (auto& [name, t] : named_parameters()) out.push_back(t);
    return out;
}

NamedTensors Module::named_buffers() const {
    NamedTensors out;
    collect(out, false, true, true);
    return out;
}

NamedTensors Module::state_dict() const {
    NamedTensors out;
    collect(out, true, true, false);
    return out;
}

std::size_t Module::num_parameters() const {
    std::size_t n = 0;
    for (const Tensor& p : parameters()) n += p.numel();
    return n;
}

std::vector<std::pair<std::string, Module*>> Module::named_children() const {
    std::vector<std::pair<std::string, Module*>> out;
    for (const auto& [name, c] : children_) out.emplace_back(name, c.get());
    return out;
}

void Module::load_state_dict(const NamedTensors& state, bool strict) {
    std::map<std::string, Tensor> mine;
    for (auto& [name, t] : state_dict()) mine.emplace(name, t);
    std::set<std::string> given, repeated_names;
    std::vector<std::string> unexpected, mismatched, repeated;
    // the names may come from a file: escaped (a NUL, a newline or a terminal escape in one), and
    // only where a message shows them
    auto shown = [](const std::string& name) { return escaped_for_message(name, false, 120); };
    for (const auto& [name, value] : state) {
        // a name given twice: which value is meant is unknowable, so neither is loaded
        if (!given.insert(name).second && repeated_names.insert(name).second) repeated.push_back(name);
        auto it = mine.find(name);
        if (it == mine.end()) {
            unexpected.push_back(name);
            continue;
        }
        if (it->second.shape() != value.shape())
            mismatched.push_back(fmt::format("{}: checkpoint {} vs module {}", shown(name), shape_str(value.shape()),
                                             shape_str(it->second.shape())));
    }
    std::vector<std::string> missing;
    for (auto& [name, t] : state_dict())
        if (!given.count(name)) missing.push_back(name);
    if (!mismatched.empty() || !repeated.empty() || (strict && (!missing.empty() || !unexpected.empty()))) {
        std::string msg = fmt::format("load_state_dict{}: the state does not fit the module",
                                      path_.empty() ? "" : " (" + path_ + ")");
        // the first kShownKeys of each list: a file of 40 000 unknown names made a 40 000-line message
        constexpr std::size_t kShownKeys = 10;
        auto list = [&](const char* what, const std::vector<std::string>& v, auto&& show) {
            if (v.empty()) return;
            msg += fmt::format("\n  {} ({}):", what, v.size());
            for (std::size_t i = 0; i < std::min(v.size(), kShownKeys); ++i) msg += "\n    " + show(v[i]);
            if (v.size() > kShownKeys) msg += fmt::format("\n    ... and {} more", v.size() - kShownKeys);
        };
        list("shape mismatches", mismatched, std::identity{});
        list("keys given more than once", repeated, shown);
        if (strict) {
            list("missing keys", missing, std::identity{});  // the module's own names
            list("unexpected keys", unexpected, shown);
        }
        throw Error(msg);
    }
    NoGradGuard no_grad;
    for (const auto& [name, value] : state) {
        auto it = mine.find(name);
        if (it != mine.end()) it->second.mutable_data() = value.data();  // copy values, keep the tensor
    }
}

void Module::train(bool on) {
    training_ = on;
    on_train(on);
    for (auto& [name, c] : children_) c->train(on);
}

void Module::zero_grad() {
    for (Tensor& p : parameters()) p.zero_grad();
}

void module_error(const Module& m, const char* module_type, const std::string& what) {
    fail("{}{}: {}", module_type, m.path().empty() ? "" : " '" + m.path() + "'", what);
}

}  // namespace xtgrad::nn
