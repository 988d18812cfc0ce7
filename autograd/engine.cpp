#include "autograd/engine.hpp"

#include "autograd/error.hpp"
#include "autograd/node.hpp"
#include "autograd/tensor.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <unordered_set>
#include <utility>
#include <vector>

namespace xtgrad {

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

double l2_norm(const Array& a) {
    double s = 0;
    for (float v : a) s += static_cast<double>(v) * v;
    return std::sqrt(s);
}

void print_trace(std::size_t step, const Node& node, const TensorImpl& out, const Array& grad) {
    std::string inputs;
    for (const ImplPtr& in : node.inputs()) {
        if (!inputs.empty()) inputs += ", ";
        inputs += in->name.empty() ? shape_str(in->storage->shape())
                                   : in->name + shape_str(in->storage->shape());
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

void run_backward(const ImplPtr& root_ptr, const Array& grad_output, bool retain_graph) {
    TensorImpl& root = *root_ptr;
    if (!root.requires_grad)
        fail("backward: '{}' {} does not require grad and has no grad_fn; set requires_grad on the "
             "leaves you want gradients for", root.name, shape_str(root.storage->shape()));
    if (grad_output.shape() != root.storage->shape())
        fail("backward: grad_output has shape {} but the tensor has shape {}",
             shape_str(grad_output.shape()), shape_str(root.storage->shape()));

    const std::vector<ImplPtr> order = topological_order(root_ptr);

    if (root.grad && root.grad_fn == nullptr)
        *root.grad += grad_output;  // a leaf root accumulates like any leaf
    else
        root.grad = std::make_shared<Array>(grad_output);

    std::size_t step = 0;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        TensorImpl& t = **it;
        if (!t.grad) continue;  // no gradient reached this tensor (e.g. an unused branch)
        if (!t.hooks.empty()) apply_hooks(t);
        Node* node = t.grad_fn.get();
        if (node == nullptr) continue;  // a leaf: its gradient stays
        if (trace_state().on) print_trace(step, *node, t, *t.grad);
        ++step;
        node->run(*t.grad);
        if (!t.retains_grad) t.grad.reset();
        if (!retain_graph) node->release();
    }
}

void Tensor::backward(bool retain_graph) const {
    if (numel() != 1)
        fail("backward: called without a gradient on '{}' of shape {}; backward() needs a "
             "one-element tensor (the loss), or pass grad_output", name(), shape_str(shape()));
    Array one = empty_array(shape());
    one.fill(1.f);
    run_backward(impl_ptr(), one, retain_graph);
}

void Tensor::backward(const Array& grad_output, bool retain_graph) const {
    if (!defined()) fail("backward: the tensor is undefined");
    run_backward(impl_ptr(), grad_output, retain_graph);
}

}  // namespace xtgrad
