#include <xtgrad/autograd/tensor.hpp>

#include <xtgrad/autograd/anomaly.hpp>
#include <xtgrad/autograd/engine.hpp>
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/grad.hpp>
#include <xtgrad/autograd/grad_mode.hpp>
#include <xtgrad/autograd/malloc_tuning.hpp>

#include <utility>

#include <xtensor/xbuilder.hpp>

namespace xtgrad {

// ---- who keeps what (tensor.hpp) ----

std::size_t TensorImpl::numel() const {
    std::size_t n = 1;
    for (std::size_t d : shape()) n *= d;
    return n;
}

Tensor::Tensor(ImplPtr impl) : impl_(std::move(impl)) {
    if (impl_) values_ = std::const_pointer_cast<TensorValues>(impl_->lock_values());
}

Tensor::Tensor(Array data, bool requires_grad) {
    detail::check_malloc_tuning();  // also keeps malloc_tuning.cpp, whose set-up runs at load, in a static link
    values_ = std::make_shared<TensorValues>(std::move(data));
    impl_ = std::make_shared<TensorImpl>();
    impl_->values = values_;
    impl_->leaf_values = values_;  // a leaf until attach_grad_fn() gives it a grad_fn
    impl_->requires_grad = requires_grad;
}

Tensor Tensor::full(const Shape& shape, float value, bool requires_grad) {
    Array a = empty_array(shape);
    a.fill(value);
    return Tensor(std::move(a), requires_grad);
}
Tensor Tensor::zeros(const Shape& shape, bool requires_grad) { return full(shape, 0.f, requires_grad); }
Tensor Tensor::ones(const Shape& shape, bool requires_grad) { return full(shape, 1.f, requires_grad); }
Tensor Tensor::scalar(float value, bool requires_grad) { return full({}, value, requires_grad); }

Tensor Tensor::from_vector(const std::vector<float>& values, const Shape& shape, bool requires_grad) {
    Array a = empty_array(shape);
    if (a.size() != values.size())
        fail("Tensor::from_vector: {} values do not fill shape {} ({} elements)", values.size(),
             shape_str(shape), a.size());
    std::copy(values.begin(), values.end(), a.begin());
    return Tensor(std::move(a), requires_grad);
}

TensorImpl& Tensor::checked() const {
    if (!impl_) fail("Tensor: this tensor is undefined (default-constructed)");
    return *impl_;
}

TensorValues& Tensor::values_of() const {
    const TensorImpl& t = checked();
    if (!values_)
        fail("Tensor: the values of {} {}{} were freed: nothing kept them (no Tensor handle, and the backward "
             "did not save them); keep a Tensor to it while it is computed to read them",
             t.name.empty() ? std::string("a tensor") : "'" + t.name + "'", shape_str(t.shape()),
             t.grad_fn ? ", the output of " + t.grad_fn->op() + "," : "");
    return *values_;
}

void TensorValues::bump_version() {
    ++version;
    if (recompute) recompute->last_version = version;
}

const Array& Tensor::data() const { return values_of().array; }
Array& Tensor::mutable_data() {
    TensorValues& v = values_of();
    v.bump_version();
    return v.array;
}
std::uint64_t Tensor::version() const { return values_of().version; }
Shape Tensor::shape() const { return values_ ? shape_of(values_->array) : checked().shape(); }
std::size_t Tensor::dim() const { return values_ ? values_->array.dimension() : checked().shape().size(); }
std::size_t Tensor::numel() const { return values_ ? values_->array.size() : checked().numel(); }

std::size_t Tensor::size(int axis) const {
    const int n = static_cast<int>(dim());
    const int a = axis < 0 ? axis + n : axis;
    if (a < 0 || a >= n) fail("Tensor::size: axis {} is out of range for shape {}", axis, shape_str(shape()));
    return shape()[static_cast<std::size_t>(a)];
}

float Tensor::item() const {
    if (numel() != 1) fail("Tensor::item: needs one element, got shape {}", shape_str(shape()));
    return *data().data();
}

bool Tensor::requires_grad() const { return checked().requires_grad; }

Tensor& Tensor::requires_grad_(bool on) {
    if (!is_leaf())
        fail("requires_grad_: '{}' is the output of {}; only leaf tensors can change requires_grad "
             "(use detach() first)", name(), grad_fn()->op());
    impl_->requires_grad = on;
    return *this;
}

bool Tensor::is_leaf() const { return checked().grad_fn == nullptr; }
const std::shared_ptr<Node>& Tensor::grad_fn() const { return checked().grad_fn; }
bool Tensor::has_grad() const { return checked().grad != nullptr; }

Tensor Tensor::grad() const {
    if (!has_grad()) return Tensor();
    if (impl_->grad_graph) return from_parts(impl_->grad_graph_values, impl_->grad_graph);
    return Tensor(*impl_->grad);
}

Tensor Tensor::from_parts(ValuesPtr values, ImplPtr impl) {
    Tensor t;
    t.values_ = std::move(values);
    t.impl_ = std::move(impl);
    return t;
}

Array& Tensor::grad_array() {
    if (!has_grad()) fail("Tensor::grad_array: '{}' {} has no gradient yet", name(), shape_str(shape()));
    // a create_graph gradient's values are a tensor's, which later nodes may have saved: a write
    // through here is an in-place write of that tensor, counted as one
    if (impl_->grad_graph_values) impl_->grad_graph_values->bump_version();
    return *impl_->grad;
}
const Array& Tensor::grad_array() const {
    if (!has_grad()) fail("Tensor::grad_array: '{}' {} has no gradient yet", name(), shape_str(shape()));
    return *impl_->grad;
}

bool Tensor::sole_holder() const { return values_ && values_.use_count() == 1 && impl_ && !impl_->leaf_values; }

Array Tensor::take_array() && {
    if (!sole_holder()) fail("take_array: '{}' shares its values (another handle, a leaf or a saved value)", name());
    Array out = std::move(values_->array);
    values_.reset();  // the impl's weak pointer expires, as when the last handle goes
    return out;
}

void Tensor::zero_grad() {
    TensorImpl& t = checked();
    t.grad.reset();
    t.grad_graph.reset();
    t.grad_graph_values.reset();
}

void Tensor::retain_grad() {
    if (!requires_grad()) fail("retain_grad: '{}' does not require grad", name());
    impl_->retains_grad = true;
}

void Tensor::register_hook(std::function<Array(const Array&)> hook) {
    if (!requires_grad()) fail("register_hook: '{}' does not require grad, so no gradient will reach it", name());
    if (!hook) fail("register_hook: the hook on '{}' is empty (a default-constructed std::function)", name());
    impl_->hooks.push_back(std::move(hook));
}

// Backpropagation itself is the engine's (autograd/engine.hpp): these only seed it.
void Tensor::backward(bool retain_graph) const {
    run_backward(graph_ptr(), detail::loss_seed(*this, "backward"), retain_graph);
}

void Tensor::backward(const Array& grad_output, bool retain_graph) const {
    if (!defined()) fail("backward: the tensor is undefined");
    run_backward(graph_ptr(), grad_output, retain_graph);
}

void Tensor::backward(bool retain_graph, bool create_graph) const {
    if (!create_graph) return backward(retain_graph);
    detail::backward_creating_graph(*this, detail::loss_seed(*this, "backward"));
}

void Tensor::backward(const Array& grad_output, bool retain_graph, bool create_graph) const {
    if (!create_graph) return backward(grad_output, retain_graph);
    detail::backward_creating_graph(*this, grad_output);
}

Tensor Tensor::detach() const {
    values_of();  // an Error if the values were freed
    Tensor d;
    d.values_ = values_;
    d.impl_ = std::make_shared<TensorImpl>();
    d.impl_->values = values_;
    d.impl_->leaf_values = values_;
    d.impl_->name = impl_->name;
    return d;
}

const std::string& Tensor::name() const { return checked().name; }
Tensor& Tensor::set_name(std::string name) {
    checked().name = std::move(name);
    return *this;
}

}  // namespace xtgrad
