// Node: one step of the backward graph.
//
// micrograd's mental model: every tensor produced by an op remembers the op (`grad_fn`),
// the tensors it came from (`inputs`), the values its backward reads, saved by name as torch
// names them (`saved`: "self", "result", "mean", ...; llm.c's rule: cache what backward needs,
// nothing more), and a closure that, given the gradient of the output, writes the gradients of
// the inputs, reading the saved values through saved(name).
//
// Ops build nodes with make_result() (autograd/make_result.hpp); the engine
// (autograd/engine.cpp) runs them in reverse topological order.
#pragma once

#include <xtgrad/autograd/array.hpp>
#include <xtgrad/autograd/grad_out.hpp>
#include <xtgrad/autograd/saved.hpp>
#include <xtgrad/autograd/source_location.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace xtgrad {

struct TensorImpl;
using ImplPtr = std::shared_ptr<TensorImpl>;

class Node {
public:
    // grad_out has the shape of the op's output; the function writes the inputs' gradients
    // through grad_out(i, shape) or accumulate(i, g) (the contract: autograd/grad_out.hpp).
    using BackwardFn = std::function<void(Node& self, const Array& grad_out)>;

    // `where` is the make_result() call that built the node (file:line of the op's code), for
    // anomaly errors, the debugger and graph pictures; the module path says which layer ran it.
    Node(std::string op, std::vector<ImplPtr> inputs, std::vector<SavedRecord> saved, BackwardFn fn,
         SourceLocation where = SourceLocation::current());
    ~Node();  // iterative: freeing a long chain of nodes does not recurse
    Node(const Node&) = delete;
    Node& operator=(const Node&) = delete;

    const std::string& op() const { return op_; }              // e.g. "MatmulBackward"
    const std::vector<ImplPtr>& inputs() const { return inputs_; }
    const std::string& module_path() const { return module_path_; }  // "" outside modules
    bool released() const { return released_; }
    const SourceLocation& where() const { return where_; }

    // Does input i want a gradient? (Backward functions skip the work for inputs that don't.)
    bool needs_grad(std::size_t i) const;

    // Input i's gradient as a whole array: moved in when it is the first (no copy), added to the
    // running sum otherwise. A gradient of a broadcast shape is summed back to the input's shape
    // here — the one place where broadcasting is undone. A gradient that cannot be reduced to the
    // input's shape is a bug in the op and throws an Error naming the op and both shapes
    // (flashlight's shape-checked accumulation). Does nothing if input i needs no gradient.
    void accumulate(std::size_t i, Array g);

    // Input i's gradient buffer, for kernels that write in place (autograd/grad_out.hpp): fresh
    // (overwrite it) if no consumer wrote yet, a running sum (add to it) otherwise; an empty
    // GradOut if input i needs no gradient. `writes` is the shape the kernel writes; it must be
    // the input's (else an Error naming the op and both shapes). A fresh buffer must be written
    // in full once asked for (if backward throws first, the engine drops every buffer).
    GradOut grad_out(std::size_t i, const Shape& writes);

    // The values the backward reads, by the names torch gives them (grad_fn._saved_<name>):
    // saved_names() lists them; saved(name) returns a float array, saved_ids / saved_mask the
    // int64 and bool ones. An unknown name throws an Error naming the node and listing its names;
    // a tensor written in place since it was saved throws the version error; after the graph
    // was freed (backward without retain_graph) every read throws.
    std::vector<std::string> saved_names() const;
    const Array& saved(const char* name) const;
    const Ids& saved_ids(const char* name) const;
    const Mask& saved_mask(const char* name) const;

    // Runs the backward function (called by the engine).
    void run(const Array& grad_out);

    // Drops the saved values and the edges, as PyTorch frees the graph after backward.
    void release();

private:
    const Saved& find_saved(const char* name) const;
    std::string op_;
    std::vector<ImplPtr> inputs_;
    // A plain vector of {const char* name, Saved value}, so a debugger (tools/gdb's printers) can
    // walk a node's saved values without calling code.
    std::vector<SavedRecord> saved_;
    BackwardFn fn_;
    std::string module_path_;
    SourceLocation where_;
    bool released_ = false;
};

}  // namespace xtgrad
