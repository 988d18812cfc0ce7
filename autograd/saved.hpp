// Saved: one value a node's backward reads, saved by the op's forward under the name torch uses
// (PyTorch's SavedVariable and grad_fn._saved_<name>). A node keeps them as SavedRecords
// {name, value} (autograd/node.hpp); its backward reads them back by name (node.saved("result")),
// so a saved value lives in exactly one place, which the debugger and the gdb printers show.
//
// A Saved holds one of
//   - a tensor's values (an input or the output): the values part, shared, so they stay alive
//     exactly as long as the node needs them, and their version at save time; reading them
//     after an in-place write throws an Error naming the node, the tensor and both versions;
//   - a float array the op computed for backward (layer norm's mean and rstd): its own, which
//     nothing else can write;
//   - integer ids (embedding's and max's indices) or a boolean mask (dropout, masked_fill).
#pragma once

#include <xtgrad/autograd/array.hpp>

#include <cstdint>
#include <memory>

namespace xtgrad {

class Node;
class Tensor;
struct TensorImpl;
struct TensorValues;

class Saved {
public:
    Saved(const Tensor& t);  // NOLINT: implicit, so records read {"self", a}
    Saved(Array owned);      // NOLINT
    Saved(Ids ids);          // NOLINT
    Saved(Mask mask);        // NOLINT

    // The float values; after an in-place write of a saved tensor, an Error (node, name, versions).
    const Array& array(const Node& node, const char* name) const;
    const Ids& ids(const Node& node, const char* name) const;
    const Mask& mask(const Node& node, const char* name) const;
    const char* kind() const;  // "float", "int64" or "bool", for messages

private:
    [[noreturn]] void modified(const Node& node, const char* name) const;
    [[noreturn]] void wrong_kind(const Node& node, const char* name, const char* want) const;
    std::shared_ptr<const TensorValues> values_;  // float values (a tensor's, or owned)
    std::uint64_t version_ = 0;                   // values_->version at save time
    std::weak_ptr<const TensorImpl> tensor_;      // the saved tensor, for the error's name only
    std::shared_ptr<const Ids> ids_;
    std::shared_ptr<const Mask> mask_;
};

// A node's saved value and the name torch gives it ("self", "other", "result", "mean", ...).
struct SavedRecord {
    const char* name;
    Saved value;
};

}  // namespace xtgrad
