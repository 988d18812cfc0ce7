// Node: one step of the backward graph.
//
// micrograd's mental model: every tensor produced by an op remembers the op (`grad_fn`),
// the tensors it came from (`inputs`) and a closure that, given the gradient of the
// output, adds the gradients of the inputs. The closure's captures are exactly what the
// forward pass saved for backward (llm.c's rule: cache what backward needs, nothing more).
//
// Ops build nodes with make_result() (autograd/make_result.hpp); the engine
// (autograd/engine.cpp) runs them in reverse topological order.
#pragma once

#include "autograd/array.hpp"
#include "autograd/grad_out.hpp"

#include <functional>
#include <memory>
#include <source_location>
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
    Node(std::string op, std::vector<ImplPtr> inputs, BackwardFn fn,
         std::source_location where = std::source_location::current());
    ~Node();  // iterative: freeing a long chain of nodes does not recurse
    Node(const Node&) = delete;
    Node& operator=(const Node&) = delete;

    const std::string& op() const { return op_; }              // e.g. "MatmulBackward"
    const std::vector<ImplPtr>& inputs() const { return inputs_; }
    const std::string& module_path() const { return module_path_; }  // "" outside modules
    bool released() const { return released_; }
    const std::source_location& where() const { return where_; }

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

    // Runs the backward function (called by the engine).
    void run(const Array& grad_out);

    // Drops the saved tensors and the edges, as PyTorch frees the graph after backward.
    void release();

private:
    std::string op_;
    std::vector<ImplPtr> inputs_;
    BackwardFn fn_;
    std::string module_path_;
    std::source_location where_;
    bool released_ = false;
};

namespace detail {
// The node whose backward function runs on this thread (null outside Node::run), so errors
// raised while it reads what it saved can name it.
const Node* running_node();
}  // namespace detail

}  // namespace xtgrad
