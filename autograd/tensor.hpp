// Tensor: a float32 N-d array that can take part in reverse-mode differentiation.
//
// A Tensor is a cheap, value-semantic handle (as flashlight's Variable): copies share one
// TensorImpl, so `Tensor b = a;` is the same tensor, not a new one. The impl holds
//   storage       the values (an xt::xarray<float>, row-major, always contiguous)
//   grad          d(loss)/d(this), filled by backward(); null until then
//   requires_grad whether gradients flow to this tensor
//   grad_fn       the Node that produced it (null for leaves: inputs and parameters)
//   name          optional; modules name their parameters by dotted path
//
// Who keeps the values (docs/architecture.md, "Who keeps the values"). An impl is reached two
// ways. The graph (Node::inputs, the engine, the debugger) holds it through its own control
// block: it needs the gradient slot (shape, grad, hooks, grad_fn), never the values. Tensors,
// the handles users hold, share a second control block, the impl's TensorOwner: `impl_` is an
// aliasing pointer, so it still points at the TensorImpl. When the last Tensor of a non-leaf
// goes, its owner releases `storage`: the impl keeps the shape (`shape()`), and a weak pointer
// to the values, which live on only while a backward closure saved them (detail::saved). So an
// intermediate is freed as soon as no Tensor and no backward needs it, as in PyTorch. Leaves
// (parameters, inputs: no grad_fn) never lose their storage. Tensor(ImplPtr) on a graph pointer
// (debug code) joins the impl's owner, or becomes it and takes the values back if a closure still
// holds them; reading values that are gone throws an Error ("values freed") instead of crashing.
//
// Every op returns a new contiguous tensor. Integer ids (Ids) and boolean masks (Mask) are
// plain xtensor arrays: they never carry gradients.
#pragma once

#include "autograd/array.hpp"
#include "autograd/node.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace xtgrad {

struct TensorOwner;

struct TensorImpl : std::enable_shared_from_this<TensorImpl> {
    std::shared_ptr<Array> storage;  // null once released (non-leaf whose Tensors are all gone)
    std::shared_ptr<Array> grad;
    bool requires_grad = false;
    bool retains_grad = false;  // keep the grad of a non-leaf after backward (retain_grad())
    std::shared_ptr<Node> grad_fn;
    std::string name;
    // Called with the incoming gradient before it is used; may return a replacement.
    std::vector<std::function<Array(const Array&)>> hooks;
    // Set when the owner released `storage`: the shape, and the values while a backward
    // closure still holds them (as a weak pointer: the impl does not keep them).
    bool values_released = false;
    Shape released_shape;
    std::weak_ptr<Array> released_values;
    std::weak_ptr<TensorOwner> owner;  // the control block the Tensors share, while one exists

    Shape shape() const { return storage ? shape_of(*storage) : released_shape; }
    std::size_t numel() const;
    // The values if anyone still holds them (storage or a backward closure), else null.
    std::shared_ptr<const Array> values() const { return storage ? storage : released_values.lock(); }
    // Drops `storage` of a non-leaf (called when its last Tensor goes); a leaf keeps it.
    void release_values();
};

// The control block of the user handles of one impl: when the last Tensor goes, it releases
// the values of a non-leaf (see the top of this file).
struct TensorOwner {
    ImplPtr impl;  // the graph's pointer (the impl's own control block)
    TensorOwner() = default;
    TensorOwner(const TensorOwner&) = delete;
    TensorOwner& operator=(const TensorOwner&) = delete;
    ~TensorOwner();
};

class Tensor {
public:
    Tensor() = default;  // an undefined tensor (no impl), like a default torch::Tensor
    explicit Tensor(Array data, bool requires_grad = false);
    // A handle on impl: joins the Tensors that already share it, or becomes its owner (an impl
    // reached through the graph whose values were released gets them back if a backward
    // closure still holds them; otherwise data() throws).
    explicit Tensor(ImplPtr impl);

    // Factories.
    static Tensor zeros(const Shape& shape, bool requires_grad = false);
    static Tensor ones(const Shape& shape, bool requires_grad = false);
    static Tensor full(const Shape& shape, float value, bool requires_grad = false);
    static Tensor scalar(float value, bool requires_grad = false);
    // Values in row-major order; throws if their count does not match the shape.
    static Tensor from_vector(const std::vector<float>& values, const Shape& shape,
                              bool requires_grad = false);

    bool defined() const { return impl_ != nullptr; }

    // Values.
    // Throws an Error if the values were freed (a Tensor made from a graph pointer, above).
    const Array& data() const;
    Array& data();  // mutable, for in-place updates outside the graph (optimizers)
    const float* ptr() const { return data().data(); }
    float* ptr() { return data().data(); }
    Shape shape() const;
    std::size_t dim() const;
    std::size_t size(int axis) const;  // negative axes count from the end
    std::size_t numel() const;
    float item() const;  // the value of a one-element tensor

    // Autograd.
    bool requires_grad() const;
    Tensor& requires_grad_(bool on = true);  // leaves only
    bool is_leaf() const;
    const std::shared_ptr<Node>& grad_fn() const;
    bool has_grad() const;
    Tensor grad() const;        // shares the gradient buffer; undefined if there is none
    Array& grad_array();        // the gradient buffer itself; throws if there is none
    const Array& grad_array() const;
    void zero_grad();           // drops the gradient (PyTorch's set_to_none)
    void retain_grad();         // keep this non-leaf's gradient after backward
    // Register a hook called with the gradient of this tensor during backward; it returns
    // the gradient to use instead (return the argument to only observe it).
    void register_hook(std::function<Array(const Array&)> hook);

    // Backpropagates from this tensor. The no-argument form needs a one-element tensor
    // (the loss); the other seeds backward with grad_output, shaped like this tensor.
    // The graph is freed afterwards unless retain_graph is true.
    void backward(bool retain_graph = false) const;
    void backward(const Array& grad_output, bool retain_graph = false) const;

    // A new leaf sharing this tensor's storage, cut from the graph.
    Tensor detach() const;

    const std::string& name() const;
    Tensor& set_name(std::string name);

    TensorImpl* impl() const { return impl_.get(); }
    // This handle: it shares the owner, so it keeps the values alive.
    const ImplPtr& impl_ptr() const { return impl_; }
    // The graph's pointer to the impl (what Node inputs hold): keeps the impl, not the values.
    ImplPtr graph_ptr() const;

private:
    TensorImpl& checked() const;
    ImplPtr impl_;
};

}  // namespace xtgrad
