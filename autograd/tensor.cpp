#include "autograd/tensor.hpp"

#include "autograd/anomaly.hpp"
#include "autograd/error.hpp"
#include "autograd/grad_mode.hpp"
#include "autograd/make_result.hpp"

#include <malloc.h>

#include <xtensor/xbuilder.hpp>

namespace xtgrad {

namespace {
// glibc hands blocks above its mmap threshold to fresh mmaps, so every large activation
// would pay page faults on each training step (see docs/performance.md). Keep freed
// memory in the process instead.
const bool malloc_tuned = [] {
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    return true;
}();
}  // namespace

Tensor::Tensor(Array data, bool requires_grad) : impl_(std::make_shared<TensorImpl>()) {
    (void)malloc_tuned;
    impl_->storage = std::make_shared<Array>(std::move(data));
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

const Array& Tensor::data() const { return *checked().storage; }
Array& Tensor::data() { return *checked().storage; }
Shape Tensor::shape() const { return shape_of(data()); }
std::size_t Tensor::dim() const { return data().dimension(); }
std::size_t Tensor::numel() const { return data().size(); }

std::size_t Tensor::size(int axis) const {
    const int n = static_cast<int>(dim());
    const int a = axis < 0 ? axis + n : axis;
    if (a < 0 || a >= n) fail("Tensor::size: axis {} is out of range for shape {}", axis, shape_str(shape()));
    return data().shape()[static_cast<std::size_t>(a)];
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
    auto g = std::make_shared<TensorImpl>();
    g->storage = impl_->grad;
    return Tensor(std::move(g));
}

Array& Tensor::grad_array() {
    if (!has_grad()) fail("Tensor::grad_array: '{}' {} has no gradient yet", name(), shape_str(shape()));
    return *impl_->grad;
}
const Array& Tensor::grad_array() const { return const_cast<Tensor*>(this)->grad_array(); }

void Tensor::zero_grad() { checked().grad.reset(); }

void Tensor::retain_grad() {
    if (!requires_grad()) fail("retain_grad: '{}' does not require grad", name());
    impl_->retains_grad = true;
}

void Tensor::register_hook(std::function<Array(const Array&)> hook) {
    if (!requires_grad()) fail("register_hook: '{}' does not require grad, so no gradient will reach it", name());
    impl_->hooks.push_back(std::move(hook));
}

Tensor Tensor::detach() const {
    auto d = std::make_shared<TensorImpl>();
    d->storage = checked().storage;
    d->name = impl_->name;
    return Tensor(std::move(d));
}

const std::string& Tensor::name() const { return checked().name; }
Tensor& Tensor::set_name(std::string name) {
    checked().name = std::move(name);
    return *this;
}

// ---- make_result ----

bool records_graph(const std::vector<Tensor>& inputs) {
    if (!is_grad_enabled()) return false;
    for (const Tensor& t : inputs)
        if (t.defined() && t.requires_grad()) return true;
    return false;
}

Tensor make_result(Array out, const char* op, const std::vector<Tensor>& inputs, Node::BackwardFn backward,
                   std::source_location where) {
    return attach_grad_fn(Tensor(std::move(out)), op, inputs, std::move(backward), where);
}

Tensor attach_grad_fn(Tensor result, const char* op, const std::vector<Tensor>& inputs, Node::BackwardFn backward,
                      std::source_location where) {
    if (anomaly_detection_enabled()) detail::check_forward_anomaly(result.data(), op, inputs, where);
    if (!records_graph(inputs)) return result;
    std::vector<ImplPtr> edges;
    edges.reserve(inputs.size());
    for (const Tensor& t : inputs) edges.push_back(t.impl_ptr());
    result.impl()->requires_grad = true;
    result.impl()->grad_fn = std::make_shared<Node>(op, std::move(edges), std::move(backward), where);
    return result;
}

}  // namespace xtgrad
