// The backward engine: Tensor::backward() calls run_backward().
//
// 1. Topological order. A depth-first walk from the root over grad_fn -> inputs, written
//    with an explicit stack (a 6-layer Transformer's graph is thousands of nodes deep in
//    places; recursion could overflow the stack). A tensor is appended after all tensors
//    it depends on, so the reversed list visits every consumer before what it consumes.
// 2. Walk that list: a tensor's node runs once all its consumers have added their
//    gradients into it, so a tensor used twice gets the sum of both contributions.
// 3. Consumers sum a tensor's gradient into its `incoming` buffer; when the tensor's turn
//    comes its hooks see that gradient, then a leaf (or a retain_grad() non-leaf) adds it into
//    .grad, which accumulates across backward calls until zero_grad(), and grad_fn runs on it.
// 4. Unless retain_graph, each node releases what it saved: the graph is freed.
//
// The walk is a BackwardPass that runs one node per call: run_backward() loops over it,
// and the debugger's BackwardStepper (autograd/debug.hpp) calls it by hand, so both visit
// the nodes in the same order. Everything else that watches or joins a pass — the trace, a
// TraceTable, the debugger's stops (debug::before_node, a place to break in gdb), anomaly
// mode's check, the post-accumulate-grad hooks — is a BackwardObserver in one list (below),
// told each event in the order of the chain rule; the loop itself is only the chain rule.
#pragma once

#include <xtgrad/autograd/array.hpp>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace xtgrad {

struct TensorImpl;
class GradientConsumer;
class Node;
class Tensor;

void run_backward(const std::shared_ptr<TensorImpl>& root, const Array& grad_output, bool retain_graph);

// A backward engine of one's own (the learner path's capstone writes one): a function that runs a
// whole pass from `root`, seeded with grad_output, in place of xtgrad's. Tensor::backward() calls
// it while it is set; null (the default) is xtgrad's engine. Its parts are public: the order
// over grad_fn()->inputs(), Node::run_into() for a node's input gradients, .grad_array() and
// has_grad() for the leaves, Node::release() to free what a node saved.
using BackwardEngine = std::function<void(const Tensor& root, const Array& grad_output, bool retain_graph)>;
void set_backward_engine(BackwardEngine engine);
// xtgrad's own engine, whatever is set (to compare a learner's against it).
void run_library_backward(const std::shared_ptr<TensorImpl>& root, const Array& grad_output, bool retain_graph);

// Tracing: print each backward node as it runs, with its gradient's shape and norm.
// Also switched on by the environment variable XTGRAD_TRACE=1 (0 or unset: off; any other value
// is an Error where it is first read: the first backward, set_trace, trace_enabled or
// check_environment).
void set_trace(bool on, std::FILE* out = stderr);
bool trace_enabled();

// The L2 norm the trace prints (accumulated in double).
double l2_norm(const Array& a);

namespace detail {

// One backward pass, walked one node at a time.
class BackwardPass {
public:
    BackwardPass(const std::shared_ptr<TensorImpl>& root, const Array& grad_output, bool retain_graph);
    BackwardPass(const BackwardPass&) = delete;  // pending_ points into order_
    BackwardPass& operator=(const BackwardPass&) = delete;
    ~BackwardPass();

    // The tensor whose node runs next (its hooks applied, its gradient complete), or null
    // when no node is left. Calling it again without run_next() returns the same tensor.
    const std::shared_ptr<TensorImpl>* next();
    // Runs the node of next()'s tensor.
    void run_next();
    std::size_t steps_run() const { return step_; }

private:
    std::vector<std::shared_ptr<TensorImpl>> order_;  // inputs before the tensors computed from them
    std::size_t remaining_;                           // order_[0, remaining_) is still to visit
    const std::shared_ptr<TensorImpl>* pending_ = nullptr;
    std::unordered_map<const TensorImpl*, std::size_t> leaf_uses_;  // node edges into each leaf not yet run
    std::vector<GradientConsumer*> consumers_;  // per input of the node about to run: the consumer offered
    // Fills consumers_ for node's inputs (autograd/gradient_consumer.hpp: when); false if none is offered.
    bool offer_consumers(const Node& node);
    std::size_t step_ = 0;
    bool retain_graph_;
    bool ended_ = false;
    // Refuses a pass started while another runs on this thread (from a hook, a node's backward or
    // a debugger stop) if the two graphs share a tensor: both would sum into its gradient.
    void refuse_overlap_with_running_passes() const;
};

// The graph below `roots` in post-order (inputs before the tensors computed from them), each
// tensor once, walked iteratively (no recursion, however deep the graph). The list owns its
// tensors: releasing a node during a pass must not free a tensor still to be visited. Only inputs
// that require grad are walked; below(t), asked once per tensor with a node, says whether to walk
// its inputs (backward: always; xtgrad::grad checks the node and stops at its inputs). The one walk
// of both engines.
std::vector<std::shared_ptr<TensorImpl>> post_order(const std::vector<std::shared_ptr<TensorImpl>>& roots,
                                                    const std::function<bool(const TensorImpl&)>& below);

// The trace's line for a node run by xtgrad::grad (autograd/grad.hpp), when the trace is on:
// "[xtgrad grad N]", or "[xtgrad grad+graph N]" for a create_graph pass.
void trace_grad_node(std::size_t step, const Node& node, const TensorImpl& out, const Array& grad, bool create_graph);

// The seed gradient of backward() without an argument: ones, for a one-element tensor.
Array loss_seed(const Tensor& loss, const char* who);

// Watches (or joins) backward passes. The engine tells every observer in the list each event of
// a pass, in this order for each node:
//   before_node -> the node runs (accumulated, per input it writes) -> node_ran ->
//   leaf_done (per leaf whose .grad it completed) -> after_node
class BackwardObserver {
public:
    virtual ~BackwardObserver() = default;
    virtual void begin() {}
    // Before node runs, with the gradient of `output` (the tensor it produced).
    virtual void before_node(std::size_t /*step*/, const Node& /*node*/, const TensorImpl& /*output*/,
                             const Array& /*grad*/) {}
    // node added a gradient of shape `from` into its input i; `summed`: the input already had one.
    virtual void accumulated(const Node& /*node*/, std::size_t /*input*/, const Shape& /*from*/,
                             bool /*summed*/) {}
    // node has run; the gradients it wrote are in its inputs' buffers, not yet in any .grad.
    virtual void node_ran(const Node& /*node*/) {}
    // leaf's .grad now holds this pass's complete gradient (its register_hook hooks have run).
    virtual void leaf_done(TensorImpl& /*leaf*/) {}
    // node is done: the leaves it completed hold their .grad.
    virtual void after_node(const Node& /*node*/) {}
    virtual void end() {}
};

// This thread's list, in the order it is told: the XTGRAD_TRACE printer, the observers added
// (innermost last), the debugger's stops, anomaly mode's check, the post-accumulate-grad hooks.
// The built-in ones are always listed and cost a branch while off.
const std::vector<BackwardObserver*>& backward_observers();

// Adds an observer to this thread's list for the scope's lifetime (a TraceTable holds one).
class ObserverScope {
public:
    explicit ObserverScope(BackwardObserver* observer);
    ~ObserverScope();
    ObserverScope(const ObserverScope&) = delete;
    ObserverScope& operator=(const ObserverScope&) = delete;

private:
    BackwardObserver* observer_;
};

}  // namespace detail

}  // namespace xtgrad
