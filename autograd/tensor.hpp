// Tensor: a float32 N-d array that can take part in reverse-mode differentiation.
//
// A Tensor is a cheap, value-semantic handle made of two shared parts, as flashlight's Variable:
// copies share both, so `Tensor b = a;` is the same tensor, not a new one.
//   TensorValues  the values (an xt::xarray<float>, row-major, always contiguous) and a version
//                 counter that every in-place write bumps (mutable_data(), mutable_ptr(): optimizer
//                 steps, init, loading, fills); reads (data(), ptr(), item(), printing) never do
//   TensorImpl    the autograd part: shape, grad, requires_grad, grad_fn (the Node that produced
//                 it; null for leaves: inputs and parameters), hooks, name
//
// Who keeps what (docs/architecture.md, "Who keeps what"). The graph (Node::inputs, the engine,
// the debugger) holds only autograd parts. A node holds the values its backward reads, as
// Saved records (Saved, autograd/node.hpp): the values plus their version at save time, so an
// in-place write after the save makes that backward throw instead of silently using new values.
// So an intermediate's values are freed as soon as no Tensor and no backward needs them, as in
// PyTorch; the autograd part keeps a weak pointer to them (for the debugger) and the shape. A
// leaf's autograd part keeps its values (a parameter or an input reached through the graph can
// always be printed). Tensor(ImplPtr) on a graph pointer (debug code) takes the values if anyone
// still holds them; otherwise data() throws an Error ("values freed").
//
// Every op returns a new contiguous tensor. Integer ids (Ids) and boolean masks (Mask) are
// plain xtensor arrays: they never carry gradients.
#pragma once

#include <xtgrad/autograd/array.hpp>
#include <xtgrad/autograd/node.hpp>
#include <xtgrad/autograd/recompute.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace xtgrad {

// The values part, shared by a tensor's handles and by the backward closures that saved it.
struct TensorValues {
    explicit TensorValues(Array a) : array(std::move(a)) {}
    Array array;
    std::uint64_t version = 0;  // +1 on every in-place write (PyTorch's version counter)
    // Copies made from these values for faster products, each with the version it was made from:
    // autocast's bf16 copy of a weight, inference's transposed and packed ones
    // (autograd/versioned_copies.hpp, whose lock guards them). They go when the values go.
    enum CopyKind { kBf16Copy, kTransposedCopy, kPackedBf16Copy, kCopyKinds };
    struct KeptCopy {
        std::uint64_t version = 0;
        std::shared_ptr<const void> copy;
    };
    mutable KeptCopy kept_copies[kCopyKinds];
    // How the op that made them can make them again, for the nodes that save them
    // (autograd/recompute.hpp); null for most values.
    std::shared_ptr<Recompute> recompute;
    // An in-place write: the version +1 (and the recipe's, which outlives the values)
    void bump_version();
};
using ValuesPtr = std::shared_ptr<TensorValues>;

// The autograd part: what the graph holds.
struct TensorImpl {
    std::weak_ptr<TensorValues> values;  // alive while a Tensor or a backward closure holds them
    ValuesPtr leaf_values;               // a leaf keeps its own values; null for an op's output
    Shape shape_at_creation;             // the shape of a non-leaf, known after its values are freed
    std::shared_ptr<Array> grad;         // d(loss)/d(this) after backward; null until then
    // The gradient arriving during a backward pass: consumers sum into it, hooks see it, then it
    // is added into `grad` (leaves, retain_grad()) and passed to grad_fn.
    std::shared_ptr<Array> incoming;
    bool requires_grad = false;
    bool retains_grad = false;  // keep the grad of a non-leaf after backward (retain_grad())
    std::shared_ptr<Node> grad_fn;
    std::string name;
    // Called with the incoming gradient before it is used; may return a replacement.
    std::vector<std::function<Array(const Array&)>> hooks;
    // After backward(create_graph = true): `grad` as a tensor of the graph that computed it (its
    // autograd part; `grad` points into its values), so grad() can be differentiated again.
    std::shared_ptr<TensorImpl> grad_graph;
    std::shared_ptr<TensorValues> grad_graph_values;
    // Forward mode (autograd/forward_ad.hpp): the tangent made or computed at dual level
    // `tangent_level` (0: none), or, instead, the op that had no jvp rule when a tangent reached it.
    std::shared_ptr<const Tensor> tangent;
    std::uint64_t tangent_level = 0;
    std::string tangent_missing;  // a copy: an op's name may be a temporary's

    Shape shape() const { return leaf_values ? shape_of(leaf_values->array) : shape_at_creation; }
    std::size_t numel() const;
    // The values if anyone still holds them, else null.
    std::shared_ptr<const TensorValues> lock_values() const {
        return leaf_values ? leaf_values : values.lock();
    }
};

class Tensor {
public:
    Tensor() = default;  // an undefined tensor (no impl), like a default torch::Tensor
    explicit Tensor(Array data, bool requires_grad = false);
    // A handle on a graph pointer: it has the values if anyone still holds them, otherwise
    // data() throws (the shape and the autograd state are always there).
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

    // Reading the values. Reads never change anything, so reading after forward (printing, item(),
    // gdb's `call`) never breaks the next backward. Throws an Error if the values were freed (a
    // Tensor made from a graph pointer, above).
    const Array& data() const;
    const float* ptr() const { return data().data(); }
    // Writing the values in place (optimizers, init, loading, fills). Bumps the version counter,
    // so a backward that saved these values before the write throws, naming its op. The write is
    // counted when the accessor is called: call it where you write, and do not keep the reference
    // for writes after a later forward (those the counter cannot see, as with torch's data_ptr()).
    Array& mutable_data();
    float* mutable_ptr() { return mutable_data().data(); }
    std::uint64_t version() const;  // how many in-place writes the values have had
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
    // A copy of the gradient, as a new leaf; undefined if there is none. After
    // backward(create_graph = true), the gradient tensor itself, with the graph that computed it.
    Tensor grad() const;
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
    // With create_graph, the gradients added into the leaves' .grad are tensors of a graph of
    // their own (grad() returns them), so they can be differentiated again (PyTorch's
    // backward(create_graph=True)). The graph is then kept whatever retain_graph says, as torch's
    // default retain_graph = create_graph: the recorded gradients read its saved values
    // (autograd/grad.hpp has the rest: xtgrad::grad).
    void backward(bool retain_graph, bool create_graph) const;
    void backward(const Array& grad_output, bool retain_graph, bool create_graph) const;

    // A new leaf sharing this tensor's storage, cut from the graph.
    Tensor detach() const;

    // True when this handle is the only holder of a non-leaf's values: no other handle, no
    // backward that saved them. An op given such a tensor by value (a temporary, or
    // std::move(t)) may take its buffer (take_array) instead of allocating another: reshape
    // relabels it, cross_entropy writes its probabilities over the logits.
    bool sole_holder() const;
    // The values' array, moved out (sole_holder() must hold, else an Error); the tensor keeps its
    // place in the graph, without values, as one whose last handle went away.
    Array take_array() &&;

    const std::string& name() const;
    Tensor& set_name(std::string name);

    // A handle on both parts as they are (the values a node saved, with the autograd part they
    // belong to): what a backward written in ops differentiates through.
    static Tensor from_parts(ValuesPtr values, ImplPtr impl);

    // The autograd part (what Node inputs hold: it keeps the gradient slot, not the values).
    TensorImpl* impl() const { return impl_.get(); }
    const ImplPtr& impl_ptr() const { return impl_; }
    const ImplPtr& graph_ptr() const { return impl_; }
    // The values part, read-only (writes go through mutable_data(), which counts them); null for
    // an undefined tensor or one whose values were freed.
    std::shared_ptr<const TensorValues> values_ptr() const { return values_; }

private:
    TensorImpl& checked() const;
    TensorValues& values_of() const;
    ValuesPtr values_;
    ImplPtr impl_;
};

}  // namespace xtgrad
