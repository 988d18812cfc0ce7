#include <xtgrad/autograd/node.hpp>
#include <xtgrad/autograd/debug.hpp>

#include <xtgrad/autograd/anomaly.hpp>
#include <xtgrad/autograd/broadcast.hpp>
#include <xtgrad/autograd/engine.hpp>
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/forward_ad.hpp>
#include <xtgrad/autograd/grad_mode.hpp>
#include <xtgrad/autograd/tensor.hpp>

#include <bit>
#include <cstring>
#include <string>
#include <utility>

namespace xtgrad {

namespace {
thread_local unsigned running_backward_depth = 0;  // create_graph backward passes running on this thread
}  // namespace

namespace detail {
BackwardDepthScope::BackwardDepthScope(unsigned depth) : previous_(running_backward_depth) {
    running_backward_depth = depth;
}
BackwardDepthScope::~BackwardDepthScope() { running_backward_depth = previous_; }
unsigned current_backward_depth() { return running_backward_depth; }
}  // namespace detail

Node::Node(std::string op, std::vector<ImplPtr> inputs, std::vector<SavedRecord> saved, BackwardFn fn,
           SourceLocation where)
    : op_(std::move(op)), inputs_(std::move(inputs)), saved_(std::move(saved)), fn_(std::move(fn)),
      module_path_(current_module_path()), where_(where), backward_depth_(running_backward_depth) {}

// Freeing a chain of nodes one destructor inside the next would recurse once per node (a graph of
// 10^6 ops overflows the stack). Instead this destructor takes over the inputs it is the last
// owner of, and their nodes' inputs in turn, so each node it frees has nothing left to free.
Node::~Node() {
    std::vector<ImplPtr> pending = std::move(inputs_);
    while (!pending.empty()) {
        ImplPtr t = std::move(pending.back());
        pending.pop_back();
        if (!t || t.use_count() != 1 || !t->grad_fn || t->grad_fn.use_count() != 1) continue;
        std::shared_ptr<Node> node = std::move(t->grad_fn);
        for (ImplPtr& in : node->inputs_) pending.push_back(std::move(in));
        node->inputs_.clear();
    }  // `node` and `t` are freed here, each with nothing left below it
}

void Node::check_input(std::size_t i, const char* call) const {
    if (i >= inputs_.size())
        fail("{}: its backward called {}({}) with a gradient for an input the node does not have: it has {} input{}{}",
             op_, call, i, inputs_.size(), inputs_.size() == 1 ? "" : "s",
             inputs_.empty() ? std::string() : fmt::format(" (0 to {})", inputs_.size() - 1));
}

bool Node::needs_grad(std::size_t i) const {
    return i < inputs_.size() && inputs_[i] && inputs_[i]->requires_grad;
}

namespace {
// d[0, n) = 0, element ranges over the pool
void fill_zeros(float* d, std::size_t n) {
    parallel_rows(n, 1, [d](std::size_t i0, std::size_t i1) { std::fill(d + i0, d + i1, 0.f); });
}

// dst (n) += src (n), element ranges over the pool: the same sums for any thread count
void add_into(float* dst, const float* src, std::size_t n) {
    parallel_rows(n, 1, [&](std::size_t i0, std::size_t i1) {
        float* __restrict d = dst;
        const float* __restrict s = src;
        for (std::size_t j = i0; j < i1; ++j) d[j] += s[j];
    });
}
}  // namespace

GradOut GradOut::part(std::size_t offset, std::size_t n) const {
    if (offset > size_ || n > size_ - offset)
        fail("GradOut::part: elements [{}, {} + {}) are not inside the buffer's {}", offset, offset, n, size_);
    touch();
    if (fresh_) {
        fill_zeros(data_, offset);
        fill_zeros(data_ + offset + n, size_ - offset - n);
    }
    return {data_ + offset, n, fresh_};
}

float* GradOut::zeroed() {
    touch();
    if (fresh_) fill_zeros(data_, size_);
    fresh_ = false;
    return data_;
}

void Node::accumulate(std::size_t i, const Array& g) {
    check_input(i, "accumulate");
    if (!needs_grad(i)) return;
    const Shape got = shape_of(g);
    if (got != inputs_[i]->shape()) return accumulate(i, Array(g));  // summed back to the input's shape there
    // the caller keeps g: written into the input's buffer (fresh: a copy; else a sum) over the pool
    grad_out(i, got).write([&](float* d, auto store) {
        const float* src = g.data();
        parallel_rows(g.size(), 1, [&](std::size_t i0, std::size_t i1) {
            float* __restrict out = d;
            const float* __restrict in = src;
            for (std::size_t j = i0; j < i1; ++j) store(out[j], in[j]);
        });
    });
}

void Node::accumulate(std::size_t i, Array&& g) {
    check_input(i, "accumulate");
    if (!needs_grad(i)) return;
    TensorImpl& in = *inputs_[i];
    const Shape want = in.shape();  // kept by the impl when its values are freed
    Shape got = shape_of(g);
    if (got != want) {
        if (!broadcasts_to(want, got))
            fail("{}: gradient for input {} has shape {} but the input has shape {}", op_, i,
                 shape_str(got), shape_str(want));
        g = sum_to_shape(g, want);
    }
    // A TraceTable, if one is watching, notes sums (in.grad exists) and reductions (got != want).
    std::shared_ptr<Array>& into = slot(i);
    for (detail::BackwardObserver* o : detail::backward_observers()) o->accumulated(*this, i, got, into != nullptr);
    if (!into)
        into = std::make_shared<Array>(std::move(g));
    else
        add_into(into->data(), g.data(), g.size());
}

std::shared_ptr<Array>& Node::slot(std::size_t i) { return sink_ != nullptr ? (*sink_)[i] : inputs_[i]->incoming; }

GradOut Node::grad_out(std::size_t i, const Shape& writes) {
    if (!needs_grad(i)) return {};
    TensorImpl& in = *inputs_[i];
    const Shape want = in.shape();
    if (writes != want)
        fail("{}: gradient for input {} has shape {} but the input has shape {}", op_, i, shape_str(writes),
             shape_str(want));
    std::shared_ptr<Array>& into = slot(i);
    const bool fresh = !into;
    for (detail::BackwardObserver* o : detail::backward_observers()) o->accumulated(*this, i, want, !fresh);
    if (fresh) into = std::make_shared<Array>(empty_array(want));
    GradOut out{into->data(), into->size(), fresh};
    if (into->size() == 0) return out;
    if (i >= 64) {  // past the marks: a fresh buffer starts as zeros, so one never written adds nothing
        if (fresh) out.zeroed();
        return out;
    }
    out.marks_ = &marks_;
    if (fresh) {
        out.bit_ = std::uint64_t{1} << i;
        marks_.unwritten |= out.bit_;
    } else if (marks_.unwritten != 0) {  // the same tensor as an earlier input, its fresh buffer unwritten?
        for (std::size_t j = 0; j < inputs_.size() && j < 64; ++j)
            if (inputs_[j] == inputs_[i] && (marks_.unwritten >> j & 1)) out.before_ |= std::uint64_t{1} << j;
    }
    return out;
}

std::vector<std::string> Node::saved_names() const {
    std::vector<std::string> names;
    for (const SavedRecord& r : saved_) names.emplace_back(r.name);
    return names;
}

const Saved& Node::find_saved(const char* name) const {
    if (released_)
        fail("{}: its saved values were freed by an earlier backward(); call the first backward with "
             "retain_graph = true to read them or to backpropagate twice", op_);
    for (const SavedRecord& r : saved_)
        if (std::strcmp(r.name, name) == 0) return r.value;
    std::string names;
    for (const SavedRecord& r : saved_) names += (names.empty() ? "" : ", ") + std::string(r.name);
    fail("{}: no saved value named '{}'; it saved {}", op_, name, names.empty() ? "nothing" : names);
}

const Array& Node::saved(const char* name) const { return find_saved(name).array(*this, name); }
const Ids& Node::saved_ids(const char* name) const { return find_saved(name).ids(*this, name); }
const Mask& Node::saved_mask(const char* name) const { return find_saved(name).mask(*this, name); }
const BitMask& Node::saved_bits(const char* name) const { return find_saved(name).bits(*this, name); }

void Node::run(const Array& grad_out) {
    const std::lock_guard<std::recursive_mutex> lock(run_mutex_);
    if (released_ || !fn_)
        fail("{}: this part of the graph was freed by an earlier backward(); call the first "
             "backward with retain_graph = true to backpropagate twice", op_);
    // a run nested in this one (on this thread) gets marks of its own; the outer run's come back after
    struct OwnMarks {
        WriteMarks& marks;
        WriteMarks outer = std::exchange(marks, {});
        ~OwnMarks() { marks = outer; }
    } own{marks_};
    // a backward of the user's own (make_result) that throws another type stops backward with an Error too
    detail::call_user_hook([&] { fn_(*this, grad_out); }, [&] { return fmt::format("{}'s backward", op_); });
    const WriteMarks marks = std::exchange(marks_, {});
    if (marks.unwritten != 0) {
        const int i = std::countr_zero(marks.unwritten);
        fail("{}: its backward took grad_out({}) and never wrote it: a fresh buffer holds no values until "
             "written (GradOut::write, data(), zeroed()); input {}'s gradient would be uninitialised memory",
             op_, i, i);
    }
    if (marks.misordered != 0)
        fail("{}: its backward wrote a gradient into a running sum before the fresh buffer of the same tensor (an "
             "input given twice) was written: that first write overwrites the sum; write the buffers in the order "
             "grad_out handed them out", op_);
}

void Node::run(std::shared_ptr<Array> grad_out, bool last_run, const std::vector<GradientConsumer*>* consumers) {
    const std::lock_guard<std::recursive_mutex> lock(run_mutex_);
    running_grad_ = std::move(grad_out);
    last_run_ = last_run;
    consumers_ = consumers;
    struct Drop {
        Node& node;
        ~Drop() {  // also when fn_ throws
            node.running_grad_.reset();
            node.last_run_ = false;
            node.consumers_ = nullptr;
        }
    } drop{*this};
    run(*running_grad_);
}

GradientConsumer* Node::grad_consumer(std::size_t i) const {
    return consumers_ != nullptr && i < consumers_->size() ? (*consumers_)[i] : nullptr;
}

Array* Node::take_saved(const char* name) {
    if (!last_run_ || debug::stops_at(*this)) return nullptr;
    for (SavedRecord& r : saved_)
        if (std::strcmp(r.name, name) == 0) return r.value.owned_array();
    return nullptr;
}

Array* Node::take_grad_out(const Array& grad_out) {
    const bool owned = running_grad_ && running_grad_.get() == &grad_out && running_grad_.use_count() == 1;
    return owned ? running_grad_.get() : nullptr;
}

void Node::pass_on(std::size_t i, const Array& grad_out) {
    if (Array* own = take_grad_out(grad_out)) accumulate(i, std::move(*own));
    else accumulate(i, grad_out);
}

// A gradient of another shape than the node's output would be read out of bounds by the kernels.
void Node::check_grad_shape(const Shape& grad, const char* who) const {
    if (grad != output_shape_)
        fail("{}: {} was given a gradient of shape {}, but its output has shape {}", op_, who, shape_str(grad),
             shape_str(output_shape_));
}

void Node::run_into(const Array& grad_out, std::vector<std::shared_ptr<Array>>& sink) {
    const std::lock_guard<std::recursive_mutex> lock(run_mutex_);
    check_grad_shape(shape_of(grad_out), "run_into");
    sink.assign(inputs_.size(), nullptr);
    struct Drop {
        Node& node;
        std::vector<std::shared_ptr<Array>>* outer;  // a run_into nested in another on this thread
        ~Drop() { node.sink_ = outer; }  // also when the backward throws
    } drop{*this, std::exchange(sink_, &sink)};
    run(grad_out);
}

std::vector<Tensor> Node::run_differentiable(const Tensor& grad_out) const {
    const std::lock_guard<std::recursive_mutex> lock(run_mutex_);  // saved values made again are written
    if (released_)
        fail("{}: this part of the graph was freed by an earlier backward(); call the first "
             "backward with retain_graph = true to backpropagate twice", op_);
    if (!diff_fn_)
        fail("{}: its backward is a kernel only, not written in xtgrad's ops, so it cannot be differentiated "
             "(create_graph = true); every op of autograd/ops.hpp can be, and an op of one's own through "
             "differentiable() (autograd/node.hpp)", op_);
    check_grad_shape(grad_out.shape(), "run_differentiable");
    std::vector<Tensor> grads;
    // a backward in ops of the user's own that throws another type stops with an Error too
    detail::call_user_hook([&] { grads = diff_fn_(*this, grad_out); },
                           [&] { return fmt::format("{}'s backward in ops", op_); });
    if (grads.size() != inputs_.size())
        fail("{}: its backward in ops returned {} gradients for {} inputs", op_, grads.size(), inputs_.size());
    return grads;
}

Tensor Node::input(std::size_t i) const { return Tensor(inputs_.at(i)); }

Tensor Node::saved_tensor(const char* name) const {
    const Saved& s = find_saved(name);
    const Array& values = s.array(*this, name);  // the version check
    return s.as_tensor(values);
}

Tensor Node::saved_constant(const char* name) const {
    const Saved& s = find_saved(name);
    if (std::strcmp(s.kind(), "float") == 0) return Tensor(s.array(*this, name));
    if (std::strcmp(s.kind(), "int64") == 0) return Tensor(Array(xt::cast<float>(s.ids(*this, name))));
    if (std::strcmp(s.kind(), "bool") == 0) return Tensor(Array(xt::cast<float>(s.mask(*this, name))));
    const BitMask& bits = s.bits(*this, name);
    Array out = empty_array(bits.shape());
    float* o = out.data();
    for_each_bit(bits, [o](std::size_t i, float on) { o[i] = on; });
    return Tensor(std::move(out));
}

void Node::release() {
    const std::lock_guard<std::recursive_mutex> lock(run_mutex_);  // not under another thread's run
    fn_ = nullptr;
    diff_fn_ = nullptr;
    inputs_.clear();
    saved_.clear();
    released_ = true;
}

// ---- Saved ----

Saved::Saved(const Tensor& t) : values_(t.values_ptr()), version_(t.version()), tensor_(t.impl_ptr()) {
    // as they were made: their recipe instead, so that nothing here keeps them
    if (values_->recompute && version_ == 0) {
        recompute_ = values_->recompute;
        values_.reset();
    }
}
// Made non-const (held through a pointer to const), so owned_array() may hand it out for writing.
Saved::Saved(Array owned) : values_(std::make_shared<TensorValues>(std::move(owned))), owned_(true) {}
Saved::Saved(Ids ids) : ids_(std::make_shared<const Ids>(std::move(ids))) {}
Saved::Saved(Mask mask) : mask_(std::make_shared<const Mask>(std::move(mask))) {}
Saved::Saved(BitMask bits) : bits_(std::make_shared<const BitMask>(std::move(bits))) {}

const char* Saved::kind() const { return ids_ ? "int64" : mask_ ? "bool" : bits_ ? "bits" : "float"; }

const Array& Saved::array(const Node& node, const char* name) const {
    if (!values_ && recompute_) values_ = made_again(node, name);
    if (!values_) wrong_kind(node, name, "float");
    if (values_->version != version_) modified(node, name, values_->version);
    return values_->array;
}

// The recipe's values: still held (by a handle, or made again for another node), else made again
std::shared_ptr<const TensorValues> Saved::made_again(const Node& node, const char* name) const {
    Recompute& r = *recompute_;
    const std::lock_guard<std::mutex> lock(r.mutex);
    if (std::shared_ptr<TensorValues> held = r.made.lock()) return held;
    if (r.last_version != version_) modified(node, name, r.last_version);
    std::shared_ptr<TensorValues> made;
    try {
        made = std::make_shared<TensorValues>(r.make());
    } catch (const Error& e) {  // what they are made from changed, or went with an earlier backward
        fail("{}: its saved '{}' is {}'s output, freed after forward and made again when read "
             "({}=0 keeps it instead), and making it failed: {}", node.op(), name, r.what, r.switch_name, e.what());
    }
    made->recompute = recompute_;
    r.made = made;
    // the graph's weak pointer too, so the debugger shows them while they live
    if (const std::shared_ptr<const TensorImpl> t = tensor_.lock(); t && t->values.expired())
        std::const_pointer_cast<TensorImpl>(t)->values = made;
    return made;
}

const Ids& Saved::ids(const Node& node, const char* name) const {
    if (!ids_) wrong_kind(node, name, "int64");
    return *ids_;
}

const Mask& Saved::mask(const Node& node, const char* name) const {
    if (!mask_) wrong_kind(node, name, "bool");
    return *mask_;
}

Array* Saved::owned_array() {
    if (!owned_ || values_.use_count() != 1) return nullptr;
    return &const_cast<TensorValues&>(*values_).array;
}

const BitMask& Saved::bits(const Node& node, const char* name) const {
    if (!bits_) wrong_kind(node, name, "bits");
    return *bits_;
}

void Saved::wrong_kind(const Node& node, const char* name, const char* want) const {
    fail("{}: saved value '{}' holds {} values, not {}", node.op(), name, kind(), want);
}

void Saved::modified(const Node& node, const char* name, std::uint64_t now) const {
    const std::shared_ptr<const TensorImpl> t = tensor_.lock();
    std::string who = "a tensor";
    if (t) {
        who = t->name.empty() ? "a tensor " : "'" + t->name + "' ";
        who += shape_str(t->shape());
        if (t->grad_fn) who += ", the output of " + t->grad_fn->op() + ",";
    }
    fail("{}: {} it saved for backward (as '{}') was modified by an inplace operation (mutable_data(), "
         "mutable_ptr(), an optimizer step): it is at version {}, the backward expected version {}; write into a copy, or after "
         "backward", node.op(), who, name, now, version_);
}

Tensor Saved::as_tensor(const Array& values) const {
    const std::shared_ptr<TensorImpl> impl = std::const_pointer_cast<TensorImpl>(tensor_.lock());
    if (owned_ || !impl) return Tensor(values);  // the op's own array, or a tensor nobody holds: a constant
    return Tensor::from_parts(std::const_pointer_cast<TensorValues>(values_), impl);
}

// ---- make_result ----

bool records_graph(const std::vector<Tensor>& inputs) {
    if (!is_grad_enabled()) return false;
    for (const Tensor& t : inputs)
        if (t.defined() && t.requires_grad()) return true;
    return false;
}

Tensor make_result(Array out, const char* op, const std::vector<Tensor>& inputs, std::vector<SavedRecord> saved,
                   Node::BackwardFn backward, SourceLocation where) {
    return attach_grad_fn(Tensor(std::move(out)), op, inputs, std::move(saved), std::move(backward), where);
}

Tensor attach_grad_fn(Tensor result, const char* op, const std::vector<Tensor>& inputs,
                      std::vector<SavedRecord> saved, Node::BackwardFn backward, SourceLocation where) {
    if (!backward) fail("{}: make_result was given no backward function (an empty Node::BackwardFn)", op);
    if (anomaly_detection_enabled()) detail::check_forward_anomaly(result.data(), op, inputs, where);
    if (detail::forward_active()) [[unlikely]]
        detail::mark_missing_jvp(result, op, inputs);  // until the op's jvp rule sets the tangent
    if (!records_graph(inputs)) return result;
    std::vector<ImplPtr> edges;
    edges.reserve(inputs.size());
    for (const Tensor& t : inputs) edges.push_back(t.graph_ptr());  // the slot, not the values
    TensorImpl& out = *result.impl();
    out.shape_at_creation = out.shape();
    out.leaf_values.reset();  // the graph holds the autograd part only; handles and closures the values
    out.requires_grad = true;
    out.grad_fn = std::make_shared<Node>(op, std::move(edges), std::move(saved), std::move(backward), where);
    out.grad_fn->output_shape_ = out.shape_at_creation;
    return result;
}

Tensor differentiable(Tensor result, Node::DifferentiableFn fn) {
    if (result.defined() && result.grad_fn()) result.grad_fn()->set_differentiable(std::move(fn));
    return result;
}

}  // namespace xtgrad
