#include "autograd/ops/saved.hpp"

#include "autograd/node.hpp"

namespace xtgrad::detail {

void Saved::modified() const {
    const Node* node = running_node();
    const std::shared_ptr<const TensorImpl> t = tensor_.lock();
    std::string who = "a tensor";
    if (t) {
        who = t->name.empty() ? "a tensor " : "'" + t->name + "' ";
        who += shape_str(shape_of(values_->array));
        if (t->grad_fn) who += ", the output of " + t->grad_fn->op() + ",";
    }
    fail("{}: {} it saved for backward was modified by an inplace operation (data(), ptr(), an optimizer "
         "step): it is at version {}, the backward expected version {}; write into a copy, or after backward",
         node ? node->op() : std::string("a backward"), who, values_->version, version_);
}

}  // namespace xtgrad::detail
