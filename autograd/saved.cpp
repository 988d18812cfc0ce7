#include <xtgrad/autograd/saved.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/node.hpp>
#include <xtgrad/autograd/tensor.hpp>

#include <string>
#include <utility>

namespace xtgrad {

Saved::Saved(const Tensor& t) : values_(t.values_ptr()), version_(t.version()), tensor_(t.impl_ptr()) {}
Saved::Saved(Array owned) : values_(std::make_shared<const TensorValues>(std::move(owned))) {}
Saved::Saved(Ids ids) : ids_(std::make_shared<const Ids>(std::move(ids))) {}
Saved::Saved(Mask mask) : mask_(std::make_shared<const Mask>(std::move(mask))) {}

const char* Saved::kind() const { return ids_ ? "int64" : mask_ ? "bool" : "float"; }

const Array& Saved::array(const Node& node, const char* name) const {
    if (!values_) wrong_kind(node, name, "float");
    if (values_->version != version_) modified(node, name);
    return values_->array;
}

const Ids& Saved::ids(const Node& node, const char* name) const {
    if (!ids_) wrong_kind(node, name, "int64");
    return *ids_;
}

const Mask& Saved::mask(const Node& node, const char* name) const {
    if (!mask_) wrong_kind(node, name, "bool");
    return *mask_;
}

void Saved::wrong_kind(const Node& node, const char* name, const char* want) const {
    fail("{}: saved value '{}' holds {} values, not {}", node.op(), name, kind(), want);
}

void Saved::modified(const Node& node, const char* name) const {
    const std::shared_ptr<const TensorImpl> t = tensor_.lock();
    std::string who = "a tensor";
    if (t) {
        who = t->name.empty() ? "a tensor " : "'" + t->name + "' ";
        who += shape_str(shape_of(values_->array));
        if (t->grad_fn) who += ", the output of " + t->grad_fn->op() + ",";
    }
    fail("{}: {} it saved for backward (as '{}') was modified by an inplace operation (mutable_data(), "
         "mutable_ptr(), an optimizer step): it is at version {}, the backward expected version {}; write into a copy, or after "
         "backward", node.op(), who, name, values_->version, version_);
}

}  // namespace xtgrad
