#include <xtgrad/autograd/grad.hpp>

#include <xtgrad/autograd/broadcast.hpp>
#include <xtgrad/autograd/engine.hpp>
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/format.hpp>
#include <xtgrad/autograd/forward_ad.hpp>
#include <xtgrad/autograd/grad_mode.hpp>
#include <xtgrad/autograd/node.hpp>
#include <xtgrad/autograd/ops.hpp>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace xtgrad {

namespace detail {

Tensor sum_to(const Tensor& g, const Shape& shape) {
    const Shape from = g.shape();
    if (from == shape) return g;
    if (!broadcasts_to(shape, from))
        fail("grad: a gradient of shape {} cannot be summed back to an input of shape {}", shape_str(from),
             shape_str(shape));
    const std::size_t lead = from.size() - shape.size();
    std::vector<int> dims;
    for (std::size_t i = 0; i < from.size(); ++i)
        if (i < lead || (shape[i - lead] == 1 && from[i] != 1)) dims.push_back(static_cast<int>(i));
    Tensor s = dims.empty() ? g : sum(g, dims, true);
    return reshape(s, std::vector<long>(shape.begin(), shape.end()));
}

}  // namespace detail

namespace {

std::string describe(const TensorImpl& t) {
    std::string s = t.name.empty() ? "a tensor " + shape_str(t.shape()) : "'" + t.name + "' " + shape_str(t.shape());
    if (t.grad_fn) s += " (the output of " + t.grad_fn->op() + ")";
    return s;
}
std::string describe(const Tensor& t) { return describe(*t.impl()); }

struct Walk {
    bool create_graph;
    bool retain_graph;
    bool stop_at_targets;  // detail::partials: never below an input
    bool allow_unused;     // an input no gradient reaches gets an undefined tensor, not an Error
};

// The graph below the roots in post-order (detail::post_order); with stop_at_targets the walk never
// goes below a target. A node freed by an earlier pass has no edges left, so nothing below it is in.
std::vector<ImplPtr> order_from(const std::vector<ImplPtr>& roots, const std::unordered_set<const TensorImpl*>& targets,
                                bool stop_at_targets) {
    return detail::post_order(roots, [&](const TensorImpl& t) { return !(stop_at_targets && targets.count(&t) != 0); });
}

// The first tensor of the walk whose node an earlier pass freed (what lay below it is unknown), or null.
const TensorImpl* first_freed(const std::vector<ImplPtr>& order) {
    for (const ImplPtr& t : order)
        if (t->grad_fn && t->grad_fn->released()) return t.get();
    return nullptr;
}

[[noreturn]] void fail_freed(const TensorImpl& t) {
    fail("grad: {} was freed by an earlier backward() or grad(); pass retain_graph = true to the first one to go "
         "through the graph twice", t.grad_fn->op());
}

[[noreturn]] void fail_unreachable(std::size_t i, const Tensor& input) {
    fail("grad: input {}, {}, is not reachable from the outputs (GradOptions().allow_unused(true) returns an "
         "undefined tensor for it instead)", i, describe(input));
}

Tensor add_gradient(const Tensor& sum, const Tensor& g) { return sum.defined() ? add(sum, g) : g; }

// The hooks of t (register_hook) on the gradient reaching it; they take arrays, so they cannot be
// part of a recorded backward.
Tensor apply_hooks(const TensorImpl& t, const Tensor& g, bool create_graph) {
    if (t.hooks.empty()) return g;
    if (create_graph)
        fail("grad: {} has a register_hook hook, which works on arrays and cannot be part of a create_graph "
             "backward; remove it, or take the gradient without create_graph", describe(t));
    Array a = g.data();
    const auto hooks = t.hooks;
    for (const auto& hook : hooks) {
        Array replaced = hook(a);
        if (replaced.shape() != a.shape())
            fail("register_hook: a hook on '{}' returned shape {} for a gradient of shape {}", t.name,
                 shape_str(replaced.shape()), shape_str(a.shape()));
        a = std::move(replaced);
    }
    return Tensor(std::move(a));
}

// The inputs' gradients of t's node, given t's: in ops (create_graph) or by its kernel.
std::vector<Tensor> node_gradients(Node& node, const Tensor& g, bool create_graph) {
    if (create_graph) {
        struct GradOn {
            bool previous = is_grad_enabled();
            GradOn() { set_grad_enabled(true); }
            ~GradOn() { set_grad_enabled(previous); }
        } on;
        return node.run_differentiable(g);
    }
    NoGradGuard off;
    std::vector<std::shared_ptr<Array>> sink;
    node.run_into(g.data(), sink);
    std::vector<Tensor> out(sink.size());
    for (std::size_t i = 0; i < sink.size(); ++i)
        if (sink[i]) out[i] = Tensor(std::move(*sink[i]));
    return out;
}

// Grad mode on for a whole create_graph walk (inside a NoGradGuard too): the node's backward, the
// sums of its consumers' gradients and the broadcasts summed back are all part of the new graph.
struct GradModeAs {
    bool previous = is_grad_enabled();
    explicit GradModeAs(bool on) { set_grad_enabled(on); }
    ~GradModeAs() { set_grad_enabled(previous); }
    GradModeAs(const GradModeAs&) = delete;
    GradModeAs& operator=(const GradModeAs&) = delete;
};

// grad() calls running on this thread: a hook that calls grad() through its own tensor would nest
// without end (a stack overflow), so past a depth no sane program reaches it is an Error.
thread_local int grad_nesting = 0;
constexpr int kMaxGradNesting = 64;

std::vector<Tensor> run_grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& seeds,
                             const std::vector<Tensor>& inputs, const Walk& walk) {
    if (grad_nesting >= kMaxGradNesting)
        fail("grad: {} calls nested on this thread (a register_hook hook that calls grad() through its own tensor "
             "calls itself again); a hook can take gradients of detach()ed tensors", grad_nesting);
    ++grad_nesting;
    struct Leave {
        ~Leave() { --grad_nesting; }
    } leave;
    std::unordered_set<const TensorImpl*> targets;
    for (const Tensor& in : inputs) targets.insert(in.impl());
    std::vector<ImplPtr> roots;
    for (const Tensor& out : outputs) roots.push_back(out.impl_ptr());
    const std::vector<ImplPtr> order = order_from(roots, targets, walk.stop_at_targets);

    // needed: a target is this tensor or below it; below_needed: one is below it, so its node runs
    // (only those: a node between the inputs and the graph's leaves never runs, freed or not)
    std::unordered_set<const TensorImpl*> needed, below_needed;
    for (const ImplPtr& t : order) {
        if (t->grad_fn)
            for (const ImplPtr& in : t->grad_fn->inputs())
                if (in && needed.count(in.get()) != 0) below_needed.insert(t.get());
        if (targets.count(t.get()) != 0 || below_needed.count(t.get()) != 0) needed.insert(t.get());
    }
    // Refused before any node runs, so a refused call frees nothing: an input the walk never reached
    // lies below a freed node, or nowhere below the outputs.
    const TensorImpl* freed = first_freed(order);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        if (needed.count(inputs[i].impl()) != 0) continue;  // a target is needed once the walk met it
        if (freed != nullptr) fail_freed(*freed);
        if (!walk.allow_unused) fail_unreachable(i, inputs[i]);
    }

    std::unordered_map<const TensorImpl*, Tensor> grads;
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        Tensor& slot = grads[outputs[i].impl()];
        slot = add_gradient(slot, seeds[i]);
    }
    std::unordered_map<const TensorImpl*, Tensor> results;
    std::vector<std::shared_ptr<Node>> ran;  // released at the end unless retain_graph
    std::size_t step = 0;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        TensorImpl& t = **it;
        auto found = grads.find(&t);
        if (found == grads.end() || needed.count(&t) == 0) continue;
        const Tensor g = apply_hooks(t, found->second, walk.create_graph);
        grads.erase(found);
        if (targets.count(&t) != 0) {
            results[&t] = g;
            if (walk.stop_at_targets) continue;
        }
        if (below_needed.count(&t) == 0) continue;
        Node& node = *t.grad_fn;
        // what this node's backward records (its gradients, their sums) is one level deeper than it
        const detail::BackwardDepthScope depth(node.backward_depth() + 1);
        const GradModeAs mode(walk.create_graph);
        detail::trace_grad_node(step++, node, t, g.data(), walk.create_graph);
        const std::vector<Tensor> gs = node_gradients(node, g, walk.create_graph);
        for (std::size_t i = 0; i < node.inputs().size(); ++i) {
            const ImplPtr& in = node.inputs()[i];
            if (!in || !in->requires_grad || needed.count(in.get()) == 0 || !gs[i].defined()) continue;
            Tensor& slot = grads[in.get()];
            slot = add_gradient(slot, detail::sum_to(gs[i], in->shape()));
        }
        ran.push_back(t.grad_fn);
    }
    // freed only once the whole pass has run: a pass refused half-way (a hook, a node without a
    // backward in ops, a node that gave an input no gradient) leaves the graph as it was
    if (!walk.allow_unused)
        for (std::size_t i = 0; i < inputs.size(); ++i)
            if (results.count(inputs[i].impl()) == 0) fail_unreachable(i, inputs[i]);
    if (!walk.retain_graph)
        for (const std::shared_ptr<Node>& node : ran) node->release();
    std::vector<Tensor> out;
    out.reserve(inputs.size());
    for (const Tensor& in : inputs) {
        auto r = results.find(in.impl());
        out.push_back(r == results.end() ? Tensor() : r->second);
    }
    return out;
}

}  // namespace

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, const GradOptions& options) {
    if (outputs.empty()) fail("grad: no outputs given");
    if (inputs.empty()) fail("grad: no inputs given");
    if (!grad_outputs.empty() && grad_outputs.size() != outputs.size())
        fail("grad: {} grad_outputs for {} outputs (give one per output, or none for one-element outputs)",
             grad_outputs.size(), outputs.size());
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        if (!outputs[i].defined()) fail("grad: output {} is undefined", i);
        if (!outputs[i].requires_grad())
            fail("grad: output {}, {}, does not require grad and has no grad_fn", i, describe(outputs[i]));
    }
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        if (!inputs[i].defined()) fail("grad: input {} is undefined", i);
        if (!inputs[i].requires_grad())
            fail("grad: input {}, {}, does not require grad: the outputs cannot depend on it through the graph", i,
                 describe(inputs[i]));
    }
    std::vector<Tensor> seeds;
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        const Tensor given = grad_outputs.empty() ? Tensor() : grad_outputs[i];
        if (!given.defined()) {
            seeds.emplace_back(detail::loss_seed(outputs[i], "grad"));
        } else if (given.shape() != outputs[i].shape()) {
            fail("grad: grad_outputs[{}] has shape {} but output {} has shape {}", i, shape_str(given.shape()), i,
                 shape_str(outputs[i].shape()));
        } else {
            seeds.push_back(given);
        }
    }
    // A tangent goes through a backward pass only as ops (create_graph): the kernels work on arrays,
    // and gradients without the tangents they should carry would read as independent of them.
    if (detail::forward_active() && !options.create_graph())
        for (std::size_t i = 0; i < outputs.size(); ++i)
            if (detail::has_tangent(outputs[i]) || detail::has_tangent(seeds[i]))
                fail("grad: output {}, {}, carries a forward-mode tangent, which a backward of kernels would drop; pass "
                     "GradOptions().create_graph(true) to get the gradients' tangents (forward-over-reverse), or take the "
                     "gradient of forward_ad::unpack_dual(output).primal",
                     i, describe(outputs[i]));
    const Walk walk{options.create_graph(), options.retain_graph().value_or(options.create_graph()), false,
                    options.allow_unused()};
    return run_grad(outputs, seeds, inputs, walk);
}

namespace detail {

void backward_creating_graph(const Tensor& root, const Array& grad_output) {
    if (!root.defined()) fail("backward: the tensor is undefined");
    if (!root.requires_grad())
        fail("backward: {} does not require grad and has no grad_fn; set requires_grad on the leaves you want "
             "gradients for", describe(root));
    if (shape_of(grad_output) != root.shape())
        fail("backward: grad_output has shape {} but the tensor has shape {}", shape_str(grad_output.shape()),
             shape_str(root.shape()));
    // every leaf that requires grad, and every retain_grad() tensor, gets its .grad, as backward() gives
    std::vector<Tensor> targets;
    const std::vector<ImplPtr> order = order_from({root.impl_ptr()}, {}, false);
    if (const TensorImpl* freed = first_freed(order)) fail_freed(*freed);  // its leaves would get no .grad
    for (const ImplPtr& t : order)
        if (!t->grad_fn || t->retains_grad) targets.emplace_back(t);
    // the graph is kept: the recorded gradients read its saved values
    const std::vector<Tensor> grads = run_grad({root}, {Tensor(grad_output)}, targets, Walk{true, true, false, true});
    // every .grad checked before any is written: a refused call changes none
    for (std::size_t i = 0; i < targets.size(); ++i) {
        const TensorImpl& t = *targets[i].impl();
        if (grads[i].defined() && t.grad && shape_of(*t.grad) != t.shape())
            fail("backward: cannot add a gradient of shape {} into the .grad of {}, which has shape {}",
                 shape_str(t.shape()), describe(targets[i]), shape_str(t.grad->shape()));
    }
    const GradModeAs on(true);
    std::unordered_set<const TensorValues*> stored;  // values already some leaf's .grad
    for (std::size_t i = 0; i < targets.size(); ++i) {
        if (!grads[i].defined()) continue;
        TensorImpl& t = *targets[i].impl();
        Tensor sum = t.grad ? add(targets[i].grad(), grads[i]) : grads[i];
        // two leaves may be handed the same tensor (x + w gives both its gradient): each .grad gets
        // values of its own, so writing one never changes the other
        if (!stored.insert(sum.values_ptr().get()).second) {
            const Shape shape = t.shape();
            sum = reshape(sum, std::vector<long>(shape.begin(), shape.end()));
        }
        stored.insert(sum.values_ptr().get());
        // .grad becomes the new tensor's values (an alias), its graph kept beside it for grad()
        auto values = std::const_pointer_cast<TensorValues>(sum.values_ptr());
        t.grad = std::shared_ptr<Array>(values, &values->array);
        t.grad_graph = sum.impl_ptr();
        t.grad_graph_values = std::move(values);
    }
}

std::vector<Tensor> partials(const Tensor& output, const std::vector<Tensor>& inputs, const Tensor& grad_output) {
    std::vector<Tensor> wanted;  // the inputs that can have a gradient; the others get none
    for (const Tensor& in : inputs)
        if (in.defined() && in.requires_grad()) wanted.push_back(in);
    std::vector<Tensor> got;
    if (!wanted.empty() && output.requires_grad())
        got = run_grad({output}, {grad_output}, wanted, Walk{true, true, true, true});
    // One tensor in several slots (self-attention's q = k = v = x): the walk gave each slot the
    // derivative through all of them, and the outer pass adds the slots up, so only the first keeps it.
    std::vector<Tensor> out;
    std::unordered_set<const TensorImpl*> given;
    std::size_t k = 0;
    for (const Tensor& in : inputs) {
        const bool wanted_here = in.defined() && in.requires_grad() && !got.empty();
        Tensor g = wanted_here ? got[k++] : Tensor();
        out.push_back(wanted_here && given.insert(in.impl()).second ? g : Tensor());
    }
    return out;
}

}  // namespace detail

}  // namespace xtgrad
