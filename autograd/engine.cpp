#include <xtgrad/autograd/engine.hpp>

#include <xtgrad/autograd/anomaly.hpp>
#include <xtgrad/autograd/debug.hpp>
#include <xtgrad/autograd/env_switch.hpp>
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/node.hpp>
#include <xtgrad/autograd/post_accumulate_hooks.hpp>
#include <xtgrad/autograd/tensor.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

namespace xtgrad {

double l2_norm(const Array& a) {
    double s = 0;
    for (float v : a) s += static_cast<double>(v) * v;
    return std::sqrt(s);
}

namespace {

// The passes running on this thread, outermost first: a hook may start another backward.
thread_local std::vector<const detail::BackwardPass*> running_passes;

std::string tensor_label(const TensorImpl& t) {
    std::string label = t.name.empty() ? "a tensor " + shape_str(t.shape()) : "'" + t.name + "' " + shape_str(t.shape());
    if (t.grad_fn) label += ", the output of " + t.grad_fn->op();
    return label;
}

struct TraceState {
    bool on;
    std::FILE* out = stderr;
};

TraceState& trace_state() {
    // A bad XTGRAD_TRACE throws here, and is read again at the next call (the static stays unset).
    static TraceState state{detail::read_switch(detail::kTraceSwitch)};
    return state;
}

void print_trace(std::size_t step, const Node& node, const TensorImpl& out, const Array& grad, const char* pass = "backward") {
    std::string inputs;
    for (const ImplPtr& in : node.inputs()) {
        if (!inputs.empty()) inputs += ", ";
        inputs += in->name.empty() ? shape_str(in->shape()) : in->name + shape_str(in->shape());
    }
    std::fprintf(trace_state().out, "[xtgrad %s %3zu] %-22s grad %-14s |g| = %-11.5g -> %s%s%s\n",
                 pass, step, node.op().c_str(), shape_str(grad.shape()).c_str(), l2_norm(grad),
                 inputs.c_str(), node.module_path().empty() ? "" : "  in ",
                 node.module_path().c_str());
    (void)out;
}

// Hooks see the gradient arriving in this pass (before it is added into .grad), as PyTorch's.
// The hooks are copied first: a hook may register another (it runs from the next pass on), and
// the vector it grows must not be the one being walked.
void apply_hooks(TensorImpl& t) {
    Array& g = *t.incoming;
    const std::vector<std::function<Array(const Array&)>> hooks = t.hooks;
    for (const auto& hook : hooks) {
        Array replaced = detail::call_user_hook([&] { return hook(g); },
                                                [&] { return fmt::format("register_hook: a hook on {}", tensor_label(t)); });
        if (replaced.shape() != g.shape())
            fail("register_hook: a hook on '{}' returned shape {} for a gradient of shape {}", t.name,
                 shape_str(replaced.shape()), shape_str(g.shape()));
        g = std::move(replaced);
    }
}

// A leaf, or a non-leaf that retain_grad(), adds this pass's gradient into .grad.
// A .grad of another shape (set through grad_array() or a hook) is refused, not broadcast into.
void keep_grad(TensorImpl& t) {
    if (!t.grad) {
        t.grad = t.incoming;  // shared: grad_fn only reads it, then the pass lets go of it
        return;
    }
    if (t.grad_graph) {  // a create_graph gradient's values belong to its tensor: add into a copy
        t.grad = std::make_shared<Array>(*t.grad);
        t.grad_graph.reset();
        t.grad_graph_values.reset();
    }
    if (t.grad->shape() != t.incoming->shape())
        fail("backward: cannot add a gradient of shape {} into the .grad of {}, which has shape {} (was it "
             "replaced through grad_array() or a hook?)", shape_str(t.incoming->shape()), tensor_label(t),
             shape_str(t.grad->shape()));
    *t.grad += *t.incoming;
}

// A leaf's last consumer has run: its hooks see the gradient, it is added into .grad, then the
// observers hear that it is done (the post-accumulate-grad hooks, DistributedDataParallel's
// buckets among them, see the complete .grad).
void finish_leaf(TensorImpl& t) {
    if (!t.hooks.empty()) apply_hooks(t);
    keep_grad(t);
    t.incoming.reset();
    for (detail::BackwardObserver* o : detail::backward_observers()) o->leaf_done(t);
}

// The built-in observers, each the engine's only link to its feature.
class TracePrinter final : public detail::BackwardObserver {
    void before_node(std::size_t step, const Node& node, const TensorImpl& out, const Array& grad) override {
        if (trace_state().on) print_trace(step, node, out, grad);
    }
};
class DebuggerStops final : public detail::BackwardObserver {
    // The outermost pass only (it is in running_passes from begin to end): a backward a hook
    // runs inside another belongs to the outer one's record.
    void begin() override {
        if (running_passes.size() == 1) debug::pass_began();
    }
    void before_node(std::size_t, const Node& node, const TensorImpl&, const Array& grad) override {
        debug::before_node(node, grad);
    }
    void after_node(const Node& node) override { debug::after_node(node); }
    void end() override {
        if (running_passes.size() == 1) debug::pass_ended();
    }
};
class AnomalyCheck final : public detail::BackwardObserver {
    void node_ran(const Node& node) override {
        if (anomaly_detection_enabled()) detail::check_backward_anomaly(node);
    }
};
class PostAccumulateHooks final : public detail::BackwardObserver {
    void leaf_done(TensorImpl& leaf) override { detail::run_post_accumulate_grad_hooks(leaf); }
};
TracePrinter trace_printer;
DebuggerStops debugger_stops;
AnomalyCheck anomaly_check;
PostAccumulateHooks post_accumulate_hooks;
constexpr std::size_t kBuiltInsAfterAdded = 3;  // debugger_stops, anomaly_check, post_accumulate_hooks
constexpr std::size_t kBuiltIns = 4;            // and trace_printer

std::vector<detail::BackwardObserver*>& observer_list() {
    thread_local std::vector<detail::BackwardObserver*> list{&trace_printer, &debugger_stops, &anomaly_check,
                                                             &post_accumulate_hooks};
    return list;
}

}  // namespace

void set_trace(bool on, std::FILE* out) { trace_state() = {on, out}; }

void detail::trace_grad_node(std::size_t step, const Node& node, const TensorImpl& out, const Array& grad,
                             bool create_graph) {
    if (trace_state().on) print_trace(step, node, out, grad, create_graph ? "grad+graph" : "grad");
}
bool trace_enabled() { return trace_state().on; }

namespace detail {

std::vector<ImplPtr> post_order(const std::vector<ImplPtr>& roots, const std::function<bool(const TensorImpl&)>& below) {
    // per tensor on the stack: the next input to visit, or kLeafLike when nothing below it is walked
    constexpr std::size_t kLeafLike = SIZE_MAX;
    const auto entry = [&](const ImplPtr& t) {
        return std::pair<ImplPtr, std::size_t>{t, t->grad_fn != nullptr && below(*t) ? 0 : kLeafLike};
    };
    std::vector<ImplPtr> order;
    std::unordered_set<const TensorImpl*> seen;
    for (const ImplPtr& root : roots) {
        if (!seen.insert(root.get()).second) continue;
        std::vector<std::pair<ImplPtr, std::size_t>> stack{entry(root)};
        while (!stack.empty()) {
            std::size_t& next = stack.back().second;
            const Node* node = stack.back().first->grad_fn.get();
            if (next != kLeafLike && next < node->inputs().size()) {
                const ImplPtr& in = node->inputs()[next++];
                if (in != nullptr && in->requires_grad && seen.insert(in.get()).second) stack.push_back(entry(in));
            } else {
                order.push_back(std::move(stack.back().first));
                stack.pop_back();
            }
        }
    }
    return order;
}

const std::vector<BackwardObserver*>& backward_observers() { return observer_list(); }

ObserverScope::ObserverScope(BackwardObserver* observer) : observer_(observer) {
    std::vector<BackwardObserver*>& list = observer_list();
    list.insert(list.end() - kBuiltInsAfterAdded, observer);
}

ObserverScope::~ObserverScope() {
    std::vector<BackwardObserver*>& list = observer_list();
    const auto it = std::find(list.rbegin(), list.rend(), observer_);
    if (it != list.rend()) list.erase(std::next(it).base());
}

BackwardPass::BackwardPass(const ImplPtr& root_ptr, const Array& grad_output, bool retain_graph)
    : retain_graph_(retain_graph) {
    TensorImpl& root = *root_ptr;
    if (!root.requires_grad)
        fail("backward: '{}' {} does not require grad and has no grad_fn; set requires_grad on the "
             "leaves you want gradients for", root.name, shape_str(root.shape()));
    if (shape_of(grad_output) != root.shape())
        fail("backward: grad_output has shape {} but the tensor has shape {}",
             shape_str(grad_output.shape()), shape_str(root.shape()));

    order_ = post_order({root_ptr}, [](const TensorImpl&) { return true; });
    remaining_ = order_.size();
    for (const ImplPtr& t : order_)
        if (t->grad_fn)
            for (const ImplPtr& in : t->grad_fn->inputs())
                if (in && in->requires_grad && !in->grad_fn) ++leaf_uses_[in.get()];

    refuse_overlap_with_running_passes();
    running_passes.push_back(this);
    root.incoming = std::make_shared<Array>(grad_output);
    for (BackwardObserver* o : backward_observers()) o->begin();
}

void BackwardPass::refuse_overlap_with_running_passes() const {
    if (running_passes.empty()) return;  // the usual case: no other pass, nothing to compare
    std::unordered_set<const TensorImpl*> mine;
    for (const ImplPtr& t : order_) mine.insert(t.get());
    for (const BackwardPass* outer : running_passes)
        for (const ImplPtr& t : outer->order_)
            if (mine.count(t.get()) != 0)
                fail("backward: called while another backward pass is running on this thread (from a tensor hook, a "
                     "post-accumulate hook or a debugger stop), on a graph that shares {} with it; re-entrant backward "
                     "on the same graph is not supported: build what the hook needs from detach()ed tensors",
                     tensor_label(*t));
}

// A pass that stopped early (an Error in a node) leaves no half-summed gradient behind.
BackwardPass::~BackwardPass() {
    std::erase(running_passes, this);
    for (std::size_t i = 0; i < remaining_; ++i) order_[i]->incoming.reset();
    if (pending_ != nullptr) (*pending_)->incoming.reset();
}

const ImplPtr* BackwardPass::next() {
    while (pending_ == nullptr && remaining_ > 0) {
        const ImplPtr& t = order_[--remaining_];
        if (!t->incoming) continue;  // no gradient reached this tensor, or a leaf already done
        if (!t->grad_fn) {
            finish_leaf(*t);  // a leaf root
            continue;
        }
        if (!t->hooks.empty()) apply_hooks(*t);
        if (t->retains_grad) keep_grad(*t);
        pending_ = &t;
    }
    if (pending_ == nullptr && !ended_) {
        ended_ = true;
        for (BackwardObserver* o : backward_observers()) o->end();
    }
    return pending_;
}

void BackwardPass::run_next() {
    TensorImpl& t = **pending_;
    pending_ = nullptr;
    Node& node = *t.grad_fn;
    std::shared_ptr<Array> grad = std::move(t.incoming);
    const std::vector<BackwardObserver*>& observers = backward_observers();
    for (BackwardObserver* o : observers) o->before_node(step_, node, t, *grad);
    ++step_;
    const bool consumers = offer_consumers(node);
    // the chain rule: the node's backward adds into its inputs' gradients (or hands one to a consumer)
    node.run(std::move(grad), !retain_graph_, consumers ? &consumers_ : nullptr);
    for (BackwardObserver* o : observers) o->node_ran(node);
    // A leaf whose last consumer just ran gets its gradient now (PyTorch's AccumulateGrad), so the
    // debugger sees .grad right after the node that completes it.
    for (const ImplPtr& in : node.inputs()) {
        if (!in || in->grad_fn || !in->requires_grad) continue;
        auto it = leaf_uses_.find(in.get());
        if (it != leaf_uses_.end() && --it->second == 0 && in->incoming) finish_leaf(*in);
    }
    for (BackwardObserver* o : observers) o->after_node(node);
    if (!retain_graph_) node.release();
}

// An input's gradient may go straight to a consumer only where nothing but the consumer's owner
// could see or change it (gradient_consumer.hpp): a leaf this node is the only consumer of in the
// pass, with no .grad, no tensor hook and nothing arrived yet, whose only post-accumulate hook
// registered the consumer; not under anomaly mode or another observer (a trace table, a test's).
bool BackwardPass::offer_consumers(const Node& node) {
    if (!detail::post_accumulate_consumers_registered() || anomaly_detection_enabled() ||
        observer_list().size() != kBuiltIns)
        return false;
    const std::vector<ImplPtr>& inputs = node.inputs();
    consumers_.assign(inputs.size(), nullptr);
    bool any = false;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const TensorImpl* in = inputs[i].get();
        if (in == nullptr || in->grad_fn || !in->requires_grad || in->incoming || in->grad || !in->hooks.empty() ||
            in->retains_grad)
            continue;
        const auto uses = leaf_uses_.find(in);
        if (uses == leaf_uses_.end() || uses->second != 1) continue;
        consumers_[i] = detail::post_accumulate_consumer(*in);
        any = any || consumers_[i] != nullptr;
    }
    return any;
}

Array loss_seed(const Tensor& loss, const char* who) {
    if (!loss.defined()) fail("{}: the tensor is undefined", who);
    if (loss.numel() != 1)
        fail("{}: called without a gradient on {}; {}() needs a one-element tensor (the loss), or pass {}", who,
             tensor_label(*loss.impl()), who, std::string_view(who) == "grad" ? "grad_outputs" : "grad_output");
    Array one = empty_array(loss.shape());
    one.fill(1.f);
    return one;
}

}  // namespace detail

namespace {
BackwardEngine& installed_engine() {
    static BackwardEngine engine;
    return engine;
}
}  // namespace

void set_backward_engine(BackwardEngine engine) { installed_engine() = std::move(engine); }

void run_library_backward(const ImplPtr& root, const Array& grad_output, bool retain_graph) {
    if (!root) fail("backward: the tensor is undefined");
    detail::BackwardPass pass(root, grad_output, retain_graph);
    while (pass.next() != nullptr) pass.run_next();
}

void run_backward(const ImplPtr& root, const Array& grad_output, bool retain_graph) {
    if (!root) fail("backward: the tensor is undefined");
    thread_local bool inside_installed = false;  // backward() from inside the engine would recurse forever
    if (const BackwardEngine& engine = installed_engine()) {
        if (inside_installed)
            fail("backward: called from inside the engine set with set_backward_engine, which would run that engine "
                 "again (on any graph, forever on its own); an engine of one's own runs the nodes itself "
                 "(Node::run_into), and one that wraps xtgrad's pass calls run_library_backward");
        const BackwardEngine running = engine;  // a copy: the engine may replace itself
        inside_installed = true;
        struct Leave {
            ~Leave() { inside_installed = false; }
        } leave;
        return running(Tensor(root), grad_output, retain_graph);
    }
    run_library_backward(root, grad_output, retain_graph);
}

}  // namespace xtgrad
