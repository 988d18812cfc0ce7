#include "autograd/engine.hpp"

#include "autograd/anomaly.hpp"
#include "autograd/debug.hpp"
#include "autograd/error.hpp"
#include "autograd/node.hpp"
#include "autograd/post_accumulate_hooks.hpp"
#include "autograd/tensor.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
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

struct TraceState {
    bool on;
    std::FILE* out = stderr;
};

TraceState& trace_state() {
    static TraceState state{[] {
        const char* env = std::getenv("XTGRAD_TRACE");
        return env != nullptr && std::strcmp(env, "") != 0 && std::strcmp(env, "0") != 0;
    }()};
    return state;
}

void print_trace(std::size_t step, const Node& node, const TensorImpl& out, const Array& grad) {
    std::string inputs;
    for (const ImplPtr& in : node.inputs()) {
        if (!inputs.empty()) inputs += ", ";
        inputs += in->name.empty() ? shape_str(in->shape()) : in->name + shape_str(in->shape());
    }
    std::fprintf(trace_state().out, "[xtgrad backward %3zu] %-22s grad %-14s |g| = %-11.5g -> %s%s%s\n",
                 step, node.op().c_str(), shape_str(grad.shape()).c_str(), l2_norm(grad),
                 inputs.c_str(), node.module_path().empty() ? "" : "  in ",
                 node.module_path().c_str());
    (void)out;
}

// Post-order (inputs before the tensors computed from them), iteratively. The list owns
// its tensors: releasing a node during the walk must not free a tensor still to be visited.
std::vector<ImplPtr> topological_order(const ImplPtr& root) {
    std::vector<ImplPtr> order;
    std::unordered_set<const TensorImpl*> seen{root.get()};
    std::vector<std::pair<ImplPtr, std::size_t>> stack{{root, 0}};  // tensor, next input to visit
    while (!stack.empty()) {
        ImplPtr t = stack.back().first;
        const Node* node = t->grad_fn.get();
        if (node != nullptr && stack.back().second < node->inputs().size()) {
            const ImplPtr& in = node->inputs()[stack.back().second++];
            if (in != nullptr && in->requires_grad && seen.insert(in.get()).second) stack.emplace_back(in, 0);
        } else {
            order.push_back(t);
            stack.pop_back();
        }
    }
    return order;
}

void apply_hooks(TensorImpl& t) {
    for (auto& hook : t.hooks) {
        Array replaced = hook(*t.grad);
        if (replaced.shape() != t.grad->shape())
            fail("register_hook: a hook on '{}' returned shape {} for a gradient of shape {}", t.name,
                 shape_str(replaced.shape()), shape_str(t.grad->shape()));
        *t.grad = std::move(replaced);
    }
}

}  // namespace

void set_trace(bool on, std::FILE* out) { trace_state() = {on, out}; }
bool trace_enabled() { return trace_state().on; }

namespace detail {

namespace {
thread_local BackwardObserver* observer = nullptr;
}  // namespace

BackwardObserver* backward_observer() { return observer; }
BackwardObserver* set_backward_observer(BackwardObserver* o) { return std::exchange(observer, o); }

BackwardPass::BackwardPass(const ImplPtr& root_ptr, const Array& grad_output, bool retain_graph)
    : retain_graph_(retain_graph) {
    TensorImpl& root = *root_ptr;
    if (!root.requires_grad)
        fail("backward: '{}' {} does not require grad and has no grad_fn; set requires_grad on the "
             "leaves you want gradients for", root.name, shape_str(root.shape()));
    if (shape_of(grad_output) != root.shape())
        fail("backward: grad_output has shape {} but the tensor has shape {}",
             shape_str(grad_output.shape()), shape_str(root.shape()));

    order_ = topological_order(root_ptr);
    remaining_ = order_.size();

    if (root.grad && root.grad_fn == nullptr)
        *root.grad += grad_output;  // a leaf root accumulates like any leaf
    else
        root.grad = std::make_shared<Array>(grad_output);
    if (observer) observer->begin();
}

const ImplPtr* BackwardPass::next() {
    while (pending_ == nullptr && remaining_ > 0) {
        const ImplPtr& t = order_[--remaining_];
        if (!t->grad) continue;  // no gradient reached this tensor (e.g. an unused branch)
        if (!t->hooks.empty()) apply_hooks(*t);
        // A leaf is visited after every consumer ran: its gradient is complete here.
        if (!t->grad_fn) detail::run_post_accumulate_grad_hooks(*t);
        if (t->grad_fn) pending_ = &t;  // a leaf keeps its gradient
    }
    if (pending_ == nullptr && !ended_) {
        ended_ = true;
        if (observer) observer->end();
    }
    return pending_;
}

void BackwardPass::run_next() {
    TensorImpl& t = **pending_;
    pending_ = nullptr;
    Node& node = *t.grad_fn;
    if (trace_state().on) print_trace(step_, node, t, *t.grad);
    if (observer) observer->before_node(step_, node, t, *t.grad);
    debug::before_node(node, *t.grad);
    ++step_;
    node.run(*t.grad);
    if (anomaly_detection_enabled()) check_backward_anomaly(node);
    debug::after_node(node);
    if (!t.retains_grad) t.grad.reset();
    if (!retain_graph_) node.release();
}

Array loss_seed(const Tensor& loss, const char* who) {
    if (!loss.defined()) fail("{}: the tensor is undefined", who);
    if (loss.numel() != 1)
        fail("{}: called without a gradient on '{}' of shape {}; backward() needs a "
             "one-element tensor (the loss), or pass grad_output", who, loss.name(), shape_str(loss.shape()));
    Array one = empty_array(loss.shape());
    one.fill(1.f);
    return one;
}

}  // namespace detail

void run_backward(const ImplPtr& root, const Array& grad_output, bool retain_graph) {
    detail::BackwardPass pass(root, grad_output, retain_graph);
    while (pass.next() != nullptr) pass.run_next();
}

void Tensor::backward(bool retain_graph) const {
    run_backward(graph_ptr(), detail::loss_seed(*this, "backward"), retain_graph);
}

void Tensor::backward(const Array& grad_output, bool retain_graph) const {
    if (!defined()) fail("backward: the tensor is undefined");
    run_backward(graph_ptr(), grad_output, retain_graph);
}

}  // namespace xtgrad
