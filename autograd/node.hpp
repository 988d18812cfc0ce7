// The backward graph, in one file: how an op joins it (make_result), what a step of it is
// (Node), what that step's backward reads (Saved) and how it writes gradients (GradOut).
//
// micrograd's mental model: every tensor produced by an op remembers the op (`grad_fn`),
// the tensors it came from (`inputs`), the values its backward reads, saved by name as torch
// names them (`saved`: "self", "result", "mean", ...; llm.c's rule: cache what backward needs,
// nothing more), and a closure that, given the gradient of the output, writes the gradients of
// the inputs, reading the saved values through saved(name). The engine (autograd/engine.cpp)
// runs the nodes in reverse topological order.
#pragma once

#include <xtgrad/autograd/array.hpp>
#include <xtgrad/autograd/bit_mask.hpp>
#include <xtgrad/autograd/source_location.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace xtgrad {

class GradientConsumer;
class Node;
class Tensor;
struct Recompute;
struct TensorImpl;
struct TensorValues;
using ImplPtr = std::shared_ptr<TensorImpl>;

// ---- Saved -----------------------------------------------------------------------------------
// One value a node's backward reads, saved by the op's forward under the name torch uses
// (PyTorch's SavedVariable and grad_fn._saved_<name>). A node keeps them as SavedRecords
// {name, value} (Node, below); its backward reads them back by name (node.saved("result")),
// so a saved value lives in exactly one place, which the debugger and the gdb printers show.
//
// A Saved holds one of
//   - a tensor's values (an input or the output): the values part, shared, so they stay alive
//     exactly as long as the node needs them, and their version at save time; reading them
//     after an in-place write throws an Error naming the node, the tensor and both versions.
//     Values their op can make again (layer norm's output, autograd/recompute.hpp) are saved
//     as that recipe while unchanged, and made again on the first read once nothing holds them;
//   - a float array the op computed for backward (layer norm's mean and rstd): its own, which
//     nothing else can write;
//   - integer ids (embedding's and max's indices), a boolean mask (masked_fill's, as given) or
//     a bit mask the op computed (relu's output > 0, dropout's kept elements: a bit each).
class Saved {
public:
    Saved(const Tensor& t);  // NOLINT: implicit, so records read {"self", a}
    Saved(Array owned);      // NOLINT
    Saved(Ids ids);          // NOLINT
    Saved(Mask mask);        // NOLINT
    Saved(BitMask bits);     // NOLINT

    // The float values; after an in-place write of a saved tensor, an Error (node, name, versions).
    const Array& array(const Node& node, const char* name) const;
    const Ids& ids(const Node& node, const char* name) const;
    const Mask& mask(const Node& node, const char* name) const;
    const BitMask& bits(const Node& node, const char* name) const;
    // An array saved as the node's own (Saved(Array)), when nothing else holds it; else null.
    Array* owned_array();
    const char* kind() const;  // "float", "int64", "bool" or "bits", for messages
    // The saved tensor, values and autograd part (values: array()'s, version checked); a constant
    // tensor for an owned array or when the tensor itself is gone.
    Tensor as_tensor(const Array& values) const;

private:
    [[noreturn]] void modified(const Node& node, const char* name, std::uint64_t now) const;
    std::shared_ptr<const TensorValues> made_again(const Node& node, const char* name) const;
    [[noreturn]] void wrong_kind(const Node& node, const char* name, const char* want) const;
    // float values (a tensor's, or owned); for a tensor saved as its recipe, null until first read
    mutable std::shared_ptr<const TensorValues> values_;
    std::shared_ptr<Recompute> recompute_;        // the recipe (autograd/recompute.hpp), or null
    bool owned_ = false;                          // values_ made by Saved(Array), not a tensor's
    std::uint64_t version_ = 0;                   // values_->version at save time
    std::weak_ptr<const TensorImpl> tensor_;      // the saved tensor, for the error's name only
    std::shared_ptr<const Ids> ids_;
    std::shared_ptr<const Mask> mask_;
    std::shared_ptr<const BitMask> bits_;
};

// A node's saved value and the name torch gives it ("self", "other", "result", "mean", ...).
struct SavedRecord {
    const char* name;
    Saved value;
};

// ---- GradOut ---------------------------------------------------------------------------------
// The one contract by which a backward kernel writes an input's gradient.
//
// During a backward pass every input has one gradient buffer (TensorImpl::incoming) that all
// its consumers write into. The first consumer to write finds no buffer: Node::grad_out() makes
// one WITHOUT zeroing it (`fresh`), and the kernel must overwrite every element. A later
// consumer finds the running sum and must add to it. GradOut carries that one bit and applies
// it, so a kernel is written once:
//
//   elementwise / row kernels   dx.write([&](float* d, auto store) { for (...) store(d[i], v); });
//                               `store` is Assign (d = v) or Add (d += v), chosen once per call,
//                               not per element, so both loops vectorise.
//   GEMMs                       gemm(..., dx.beta(), dx.data())     beta 0 overwrites, 1 adds
//   scatter-adds (embedding,    float* d = dx.zeroed();  d[j] += ...  a scatter must read what it
//   column sums, col2im)        adds to, so a fresh buffer is zeroed first (only then: a running
//                               sum is added to as it is)
//   a whole gradient array      Node::accumulate(i, g): moved in when fresh (no copy), added
//                               otherwise; a broadcast gradient is summed back to the input's shape
//
// Why not llm.c's "backward always accumulates" (every buffer zeroed, every kernel +=)? It is
// simpler, but zeroing every intermediate's gradient is one more full-size pass per tensor per
// step, and the first write is by far the common case (a tensor with one consumer). The explicit
// overwrite-or-add policy keeps those passes away and costs one branch per kernel call.
struct Assign {  // the first write into a fresh buffer
    void operator()(float& dst, float v) const { dst = v; }
};
struct Add {  // a later write into a running sum
    void operator()(float& dst, float v) const { dst += v; }
};

// What Node::run checks when a backward returns (GradOut::touch sets them).
struct WriteMarks {
    std::uint64_t unwritten = 0;   // bit i: input i's fresh buffer, handed out, not yet touched
    std::uint64_t misordered = 0;  // 1: a running sum was written before its fresh buffer
};

class GradOut {
public:
    GradOut() = default;  // no gradient wanted: false, kernels skip the work
    GradOut(float* data, std::size_t size, bool fresh) : data_(data), size_(size), fresh_(fresh) {}
    // For kernels called outside a graph (tests, benchmarks).
    static GradOut overwrite(float* data, std::size_t size) { return {data, size, true}; }
    static GradOut add_into(float* data, std::size_t size) { return {data, size, false}; }

    explicit operator bool() const { return data_ != nullptr; }
    float* data() const { return touch(); }
    std::size_t size() const { return size_; }
    bool fresh() const { return fresh_; }     // true: the buffer holds garbage; the first write overwrites
    float beta() const {  // GEMM's beta for this buffer
        touch();
        return fresh_ ? 0.f : 1.f;
    }

    // Runs body(data, store) with store = Assign for a fresh buffer, Add for a running sum.
    template <class Body>
    void write(Body&& body) const {
        touch();
        if (fresh_)
            body(data_, Assign{});
        else
            body(data_, Add{});
    }

    // The elements [offset, offset + n) alone, for a kernel that writes only those (linear_rows:
    // the row block of a packed weight's gradient). A fresh buffer gets zeros everywhere else
    // first, so the whole buffer is written once the part is.
    // (The zeros go over the pool: a packed weight's 2 MiB of them were a serial stretch of backward.)
    GradOut part(std::size_t offset, std::size_t n) const;

    // The buffer, ready to be added into (scatter-adds): zero-filled if fresh. Afterwards the
    // buffer counts as a running sum.
    float* zeroed();

private:
    friend class Node;
    // A fresh buffer Node::grad_out handed out (inputs 0-63): its bit in the node's marks, cleared
    // by any way in to the buffer above (data, beta, write, part, zeroed), so a backward that asks
    // for a buffer and never writes it gets an Error, not uninitialised memory as a gradient. A
    // running sum handed out while a fresh buffer of the same tensor (an op's input given twice)
    // is unwritten carries that bit as `before_`: written first, it would be overwritten by the
    // fresh one's first write, so the node notes it as misordered.
    // Atomic: kernels hand copies of a GradOut to the pool's threads.
    float* touch() const {
        if (marks_ != nullptr) {
            std::atomic_ref<std::uint64_t> unwritten(marks_->unwritten);
            const std::uint64_t now = unwritten.load(std::memory_order_relaxed);
            if (now & before_) std::atomic_ref<std::uint64_t>(marks_->misordered).store(1, std::memory_order_relaxed);
            if (now & bit_) unwritten.fetch_and(~bit_, std::memory_order_relaxed);
        }
        return data_;
    }
    float* data_ = nullptr;
    std::size_t size_ = 0;
    bool fresh_ = false;
    struct WriteMarks* marks_ = nullptr;
    std::uint64_t bit_ = 0;     // this buffer's, while fresh and unwritten
    std::uint64_t before_ = 0;  // fresh buffers of the same tensor that must be written first
};

// The inputs' gradients a backward written in ops returns (Node::DifferentiableFn), one per input.
using Grads = std::vector<Tensor>;

// ---- Node ------------------------------------------------------------------------------------
// One step of the backward graph; ops build nodes with make_result() (below).
class Node {
public:
    // grad_out has the shape of the op's output; the function writes the inputs' gradients
    // through grad_out(i, shape) or accumulate(i, g) (the contract: GradOut, above).
    using BackwardFn = std::function<void(Node& self, const Array& grad_out)>;
    // The same backward written in xtgrad's own ops (PyTorch's derivatives.yaml formulas), so that
    // under create_graph (autograd/grad.hpp) the gradients it returns are tensors of a graph too
    // and can be differentiated again. One tensor per input, in the output's shape or the input's
    // (a broadcast gradient is summed back by the engine); undefined for an input it gives nothing.
    using DifferentiableFn = std::function<std::vector<Tensor>(const Node& self, const Tensor& grad_out)>;

    // `where` is the make_result() call that built the node (file:line of the op's code), for
    // anomaly errors, the debugger and graph pictures; the module path says which layer ran it.
    Node(std::string op, std::vector<ImplPtr> inputs, std::vector<SavedRecord> saved, BackwardFn fn,
         SourceLocation where = SourceLocation::current());
    ~Node();  // iterative: freeing a long chain of nodes does not recurse
    Node(const Node&) = delete;
    Node& operator=(const Node&) = delete;

    const std::string& op() const { return op_; }              // e.g. "MatmulBackward"
    const std::vector<ImplPtr>& inputs() const { return inputs_; }
    const Shape& output_shape() const { return output_shape_; }  // the gradient it takes has this shape
    // Input i as a tensor (its autograd part, and its values if anything still holds them): an
    // edge for a node a backward in ops adds.
    Tensor input(std::size_t i) const;
    const std::string& module_path() const { return module_path_; }  // "" outside modules
    bool released() const { return released_; }
    const SourceLocation& where() const { return where_; }

    // Does input i want a gradient? (Backward functions skip the work for inputs that don't.)
    // False past the inputs too: an op's optional input not given (a linear without bias asks for
    // input 2), as grad_out then gives an empty GradOut; accumulate there is an Error.
    bool needs_grad(std::size_t i) const;

    // Input i's gradient as a whole array: moved in when it is the first (no copy), added to the
    // running sum otherwise. A gradient of a broadcast shape is summed back to the input's shape
    // here — the one place where broadcasting is undone. A gradient that cannot be reduced to the
    // input's shape is a bug in the op and throws an Error naming the op and both shapes
    // (flashlight's shape-checked accumulation). Does nothing if input i needs no gradient; an
    // i past the node's inputs is an Error naming the node (a gradient computed for nothing).
    // A gradient the caller keeps (an lvalue) is copied or added over xtgrad's pool.
    void accumulate(std::size_t i, Array&& g);
    void accumulate(std::size_t i, const Array& g);

    // Input i's gradient buffer, for kernels that write in place (GradOut, above): fresh
    // (overwrite it) if no consumer wrote yet, a running sum (add to it) otherwise; an empty
    // GradOut if input i needs no gradient. `writes` is the shape the kernel writes; it must be
    // the input's (else an Error naming the op and both shapes). A fresh buffer must be written
    // in full once asked for (if backward throws first, the engine drops every buffer); one the
    // backward never touched is an Error naming the node when its backward returns.
    GradOut grad_out(std::size_t i, const Shape& writes);

    // The values the backward reads, by the names torch gives them (grad_fn._saved_<name>):
    // saved_names() lists them; saved(name) returns a float array, saved_ids / saved_mask /
    // saved_bits the int64, bool and bit-mask ones. An unknown name throws an Error naming the
    // node and listing its names; a tensor written in place since it was saved throws the
    // version error; after the graph was freed (backward without retain_graph) every read throws.
    std::vector<std::string> saved_names() const;
    const Array& saved(const char* name) const;
    const Ids& saved_ids(const char* name) const;
    const Mask& saved_mask(const char* name) const;
    const BitMask& saved_bits(const char* name) const;

    // Who takes input i's whole gradient straight from the kernel (the optimizer's step in
    // backward: autograd/gradient_consumer.hpp says when the engine offers one); null when none
    // is offered. A backward that hands the gradient over writes nothing through grad_out(i) or
    // accumulate(i).
    GradientConsumer* grad_consumer(std::size_t i) const;

    // Runs the backward function (called by the engine). Given the gradient's owner, the
    // backward may take the buffer instead of copying it (take_grad_out).
    void run(const Array& grad_out);
    // last_run: the graph is freed after this run (backward without retain_graph), so the
    // backward may take what it saved (take_saved). consumers: per input, the one offered (or null).
    void run(std::shared_ptr<Array> grad_out, bool last_run,
             const std::vector<GradientConsumer*>* consumers = nullptr);

    // For a backward that passes its gradient on unchanged or only relabelled (reshape, add): the
    // buffer of grad_out, when the engine handed it over and nothing else holds it (no hook, no
    // retained .grad), so it can be moved on instead of copied; else null.
    Array* take_grad_out(const Array& grad_out);
    // accumulate(i, grad_out) as the backward's last use of grad_out: its buffer moves on when
    // take_grad_out allows, else it is copied.
    void pass_on(std::size_t i, const Array& grad_out);
    // On the last run only (above): an array the forward saved as its own under `name` (not a
    // tensor's values), for the backward to write its gradient over (cross_entropy's probs
    // become the logits' gradient); null otherwise, or when a debugger stop after this node
    // (debug::matched_node_done) would show the saved values.
    Array* take_saved(const char* name);

    // Drops the saved values and the edges, as PyTorch frees the graph after backward.
    void release();

    // ---- higher order (autograd/grad.hpp) ----
    // Gives the node its backward in ops (above); ops call it through differentiable() (below).
    void set_differentiable(DifferentiableFn fn) { diff_fn_ = std::move(fn); }
    // Can create_graph go through this node? False for an op whose backward exists only as a
    // kernel: create_graph then stops with an Error naming it, never a silently wrong derivative.
    bool twice_differentiable() const { return static_cast<bool>(diff_fn_) && !released_; }
    // Runs the backward in ops: the inputs' gradients as tensors of a new graph.
    std::vector<Tensor> run_differentiable(const Tensor& grad_out) const;
    // Runs the kernel backward with the inputs' gradients written into `sink` (one slot per
    // input) instead of the inputs' buffers: grad() without create_graph, which never touches a
    // tensor's state.
    void run_into(const Array& grad_out, std::vector<std::shared_ptr<Array>>& sink);
    // A saved tensor as a tensor of the graph (its values as saved, its autograd part), so a
    // backward in ops that reads it depends on it; a constant if that tensor is gone.
    Tensor saved_tensor(const char* name) const;
    // The saved values of any kind as a float tensor that is a constant (masks as 0/1, ids as
    // their values): what a backward in ops multiplies by but never differentiates.
    Tensor saved_constant(const char* name) const;
    // 0 for a node of the forward; k for one recorded while a create_graph backward of depth k ran
    // (the second pass's nodes are 1), for the trace, the graph pictures and the debugger.
    unsigned backward_depth() const { return backward_depth_; }

private:
    const Saved& find_saved(const char* name) const;
    std::string op_;
    std::vector<ImplPtr> inputs_;
    // A plain vector of {const char* name, Saved value}, so a debugger (tools/gdb's printers) can
    // walk a node's saved values without calling code.
    std::vector<SavedRecord> saved_;
    BackwardFn fn_;
    std::shared_ptr<Array> running_grad_;  // the gradient run() was handed, while fn_ runs
    bool last_run_ = false;                 // ... and whether the graph is freed after it
    const std::vector<GradientConsumer*>* consumers_ = nullptr;  // ... and the consumers offered
    friend Tensor attach_grad_fn(Tensor, const char*, const std::vector<Tensor>&, std::vector<SavedRecord>,
                                 Node::BackwardFn, SourceLocation);
    Shape output_shape_;  // set by attach_grad_fn
    void check_grad_shape(const Shape& grad, const char* who) const;
    std::vector<std::shared_ptr<Array>>* sink_ = nullptr;  // run_into's slots, while it runs
    // One run at a time: passes over a shared graph from several threads (grad() with retain_graph)
    // would otherwise write each other's sink_, marks_ and saved values made again. Recursive: a
    // backward of the user's own may run a pass through its own node on the same thread.
    mutable std::recursive_mutex run_mutex_;
    std::shared_ptr<Array>& slot(std::size_t i);  // where input i's gradient goes
    DifferentiableFn diff_fn_;
    std::string module_path_;
    SourceLocation where_;
    WriteMarks marks_;  // the grad_out buffers' marks (GradOut::touch), while fn_ runs
    void check_input(std::size_t i, const char* call) const;
    unsigned backward_depth_;
    bool released_ = false;
};

namespace detail {
// While one lives, the nodes this thread records belong to a create_graph backward of this depth
// (Node::backward_depth): the differentiated node's depth + 1.
class BackwardDepthScope {
public:
    explicit BackwardDepthScope(unsigned depth);
    ~BackwardDepthScope();
    BackwardDepthScope(const BackwardDepthScope&) = delete;
    BackwardDepthScope& operator=(const BackwardDepthScope&) = delete;

private:
    unsigned previous_;
};
unsigned current_backward_depth();
}  // namespace detail

// ---- make_result -----------------------------------------------------------------------------
// How an op joins the graph. Every op computes its output array, then calls
//
//   return make_result(std::move(out), "MulBackward", {a, b}, {{"self", a}, {"other", b}},
//                      [](Node& self, const Array& g) {
//                          if (self.needs_grad(0)) self.accumulate(0, Array(g * self.saved("other")));
//                          ...
//                      });
//
// with the inputs (the graph's edges), what backward reads under torch's names (Saved, above;
// `{}` when it reads nothing) and the backward closure, which reads them through self.saved(name)
// and writes the inputs' gradients through the contract of GradOut (above).
// The node is only built when grad mode is on and some input requires a gradient, so
// inference pays nothing for autograd. `where` defaults to the caller's file:line, i.e. the
// op's make_result() call; the node keeps it for anomaly errors and the debugger. In anomaly
// mode (autograd/anomaly.hpp) every output is checked here, whether or not a node is built.
Tensor make_result(Array out, const char* op, const std::vector<Tensor>& inputs, std::vector<SavedRecord> saved,
                   Node::BackwardFn backward, SourceLocation where = SourceLocation::current());

// The same for an output tensor that already exists (so the node can save the output itself as
// "result", e.g. exp's backward reuses exp(x)). Returns `result`.
Tensor attach_grad_fn(Tensor result, const char* op, const std::vector<Tensor>& inputs,
                      std::vector<SavedRecord> saved, Node::BackwardFn backward,
                      SourceLocation where = SourceLocation::current());

// True when an op with these inputs records a node (grad mode on, some input requires grad).
bool records_graph(const std::vector<Tensor>& inputs);

// Gives `result`'s node (just made by make_result) its backward in ops; returns `result`. Every
// op's make_result call is wrapped in it:
//   return differentiable(make_result(...), [](const Node& self, const Tensor& g) -> std::vector<Tensor> {
//       return {mul(g, self.saved_tensor("other")), mul(g, self.saved_tensor("self"))};
//   });
// Does nothing when no node was recorded (inference, no input requiring grad).
Tensor differentiable(Tensor result, Node::DifferentiableFn fn);

}  // namespace xtgrad

// make_result returns a Tensor: an op's file needs only this header. (tensor.hpp includes this
// one first for the types above; #pragma once ends the cycle.)
#include <xtgrad/autograd/tensor.hpp>
