// Debugger support: follow a gradient through backward in gdb (docs/debugging.md).
//
// Printing. Functions gdb can call in any build (they are never inlined and always keep
// their debug info, see meson.build):
//   (gdb) call xtgrad::debug::print(t)          a tensor: name, shape, flags, values
//   (gdb) call xtgrad::debug::print_grad(t)     its gradient
//   (gdb) call xtgrad::debug::print_node(&node) a backward node and its inputs
//   (gdb) call xtgrad::debug::print_graph(t, 3) the graph below t, 3 levels deep
// and C aliases taking pointers (xtgrad_print(t.impl_._M_ptr), ...) for when gdb cannot
// resolve an overload. The gdb pretty-printers (tools/gdb/xtgrad_printers.py, with
// xtgrad_memory.py, xtgrad_node_printers.py and xtgrad_module_printers.py) print the same
// without calling into the program (so they also work on a core file).
//
// Breaking. The engine calls before_node(node, grad_out) before each backward node and
// after_node(node) after it: `break xtgrad::debug::before_node` stops at every node. To stop
// only at some, name an op and/or a module path (both must match when both are set):
//   debug::break_on_op("SoftmaxBackward");  debug::break_on_module("encoder.layers.0");
// or the environment: XTGRAD_BREAK_OP=SoftmaxBackward XTGRAD_BREAK_MODULE=encoder.layers.0.
// On a match the engine calls matched_node(node, grad_out) before the node runs and
// matched_node_done(node) after it (`break xtgrad::debug::matched_node`); with
// set_trap_on_match(true) (or XTGRAD_BREAK_TRAP=1) it also raises SIGTRAP, which stops any
// debugger without a breakpoint. A module path matches itself and everything below it.
//
// Stepping. BackwardStepper runs a backward one node per step(), exposing the node that runs
// next, its op, its module path and the gradient flowing into it. It walks the engine's own
// BackwardPass, so it visits the nodes in exactly the order backward() does.
#pragma once

#include <xtgrad/autograd/engine.hpp>
#include <xtgrad/autograd/tensor.hpp>

#include <string>

// Never inlined, cloned or optimised away across calls: gdb can break on and call them. The
// library is built by g++ (noipa); a user's clang, which lacks noipa, only reads the declarations.
#if defined(__clang__)
#define XTGRAD_DEBUG_ENTRY [[gnu::noinline]]
#else
#define XTGRAD_DEBUG_ENTRY [[gnu::noinline, gnu::noipa]]
#endif

namespace xtgrad::debug {

// ---- text (what the print functions write) ----
// "encoder.layers.0.enc_self_attn.W_Q.weight" (16,16) float32 requires_grad leaf grad=(16,16) [0.12, ...]
std::string describe(const TensorImpl& t, std::size_t max_values = 6);
// LinearBackward in encoder.layers.0.enc_self_attn.W_Q, created at ..., then one line per input
std::string describe(const Node& node);
// The graph below t as an indented tree, `depth` levels of nodes deep, at most kMaxGraphDepth
// (each level indents its lines: a 200 000-node chain in full would be tens of GB of text).
inline constexpr int kMaxGraphDepth = 1000;
std::string graph_string(const TensorImpl& t, int depth);

// ---- printing from gdb (to stdout, flushed) ----
XTGRAD_DEBUG_ENTRY void print(const Tensor& t);
XTGRAD_DEBUG_ENTRY void print_grad(const Tensor& t);
XTGRAD_DEBUG_ENTRY void print_node(const Node* node);
XTGRAD_DEBUG_ENTRY void print_graph(const Tensor& t, int depth = 3);
XTGRAD_DEBUG_ENTRY void print_graph(const Node* node, int depth = 3);

// ---- breaking in backward ----
XTGRAD_DEBUG_ENTRY void before_node(const Node& node, const Array& grad_out);
XTGRAD_DEBUG_ENTRY void after_node(const Node& node);
XTGRAD_DEBUG_ENTRY void matched_node(const Node& node, const Array& grad_out);
XTGRAD_DEBUG_ENTRY void matched_node_done(const Node& node);

XTGRAD_DEBUG_ENTRY void break_on_op(const char* op);        // "" or null: any op
XTGRAD_DEBUG_ENTRY void break_on_module(const char* path);  // "" or null: any module
XTGRAD_DEBUG_ENTRY void clear_breaks();
void set_trap_on_match(bool on);
bool matches(const Node& node);  // does the current filter select this node?
bool stops_at(const Node& node);  // ... and is it armed (matched_node and matched_node_done will be called)?

// A filter that matched none of a whole backward pass's nodes (a misspelt XTGRAD_BREAK_OP stops
// nowhere, silently otherwise) is told on stderr once per filter, when the pass ends: the filter,
// how many nodes ran, the nearest op or module path to what was asked and the ops the pass ran:
//   xtgrad: break filter op 'SoftMaxBackward' matched none of the 143 nodes of this backward pass.
//   Did you mean 'SoftmaxBackward'? Its ops: AddBackward, Conv1dBackward, ... (one line)
// unmatched_filter_note() is that text after the last pass ("" when it matched or no filter is set).
std::string unmatched_filter_note();
// The engine's begin and end of a pass (the nodes in between are recorded only while a filter is set).
void pass_began();
void pass_ended();
// Reads XTGRAD_BREAK_OP, XTGRAD_BREAK_MODULE and XTGRAD_BREAK_TRAP now (check_environment).
void check_break_environment();

// The node the engine is at, for `print *xtgrad::debug::state.node` from any frame.
struct State {
    const Node* node = nullptr;       // set before a node runs, kept until the next one
    const Array* grad_out = nullptr;  // the gradient flowing into it; null once it has run
    std::size_t matches = 0;          // how many nodes matched the filter so far
};
extern State state;

// ---- stepping ----
class BackwardStepper {
public:
    // Like loss.backward(retain_graph): a one-element tensor, seeded with 1.
    explicit BackwardStepper(const Tensor& loss, bool retain_graph = false);
    BackwardStepper(const Tensor& root, const Array& grad_output, bool retain_graph = false);

    bool done() const { return next_ == nullptr; }
    const Node& node() const;            // the node step() runs next
    const std::string& op() const;       // its op, e.g. "SoftmaxBackward"
    const std::string& module_path() const;
    const Array& grad_out() const;       // the gradient flowing into it (hooks applied)
    Tensor output() const;               // the tensor it produced, whose gradient that is
    std::size_t index() const { return pass_.steps_run(); }  // nodes run so far

    void step();        // runs node(); an Error when done()
    void run_to_end();  // the rest of the backward

private:
    const std::shared_ptr<TensorImpl>& current() const;
    detail::BackwardPass pass_;
    const std::shared_ptr<TensorImpl>* next_;
};

}  // namespace xtgrad::debug

// C names for gdb's `call` (no overloads, no references).
extern "C" {
XTGRAD_DEBUG_ENTRY void xtgrad_print(const xtgrad::TensorImpl* t);
XTGRAD_DEBUG_ENTRY void xtgrad_print_grad(const xtgrad::TensorImpl* t);
XTGRAD_DEBUG_ENTRY void xtgrad_print_array(const xtgrad::Array* a);
XTGRAD_DEBUG_ENTRY void xtgrad_print_node(const xtgrad::Node* node);
XTGRAD_DEBUG_ENTRY void xtgrad_print_graph(const xtgrad::TensorImpl* t, int depth);
XTGRAD_DEBUG_ENTRY void xtgrad_break_on_op(const char* op);
XTGRAD_DEBUG_ENTRY void xtgrad_break_on_module(const char* path);
}
