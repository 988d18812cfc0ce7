// Helpers shared by the op implementations (not part of the public API).
#pragma once

#include "autograd/error.hpp"
#include "autograd/make_result.hpp"
#include "autograd/tensor.hpp"

#include <memory>

namespace xtgrad::detail {

// What a backward closure captures to read a forward value (PyTorch's SavedVariable): the
// values part, shared, so the values stay alive for as long as the node needs them (and not
// longer), and their version at save time. Reading them (*s, s->) after an in-place write
// throws an Error naming the node, the tensor and both versions.
class Saved {
public:
    Saved() = default;
    Saved(std::nullptr_t) {}  // NOLINT: an absent optional input (layer_norm without weight)
    explicit Saved(const Tensor& t)
        : values_(t.values_ptr()), version_(t.version()), tensor_(t.impl_ptr()) {}

    const Array& operator*() const {
        if (values_->version != version_) modified();
        return values_->array;
    }
    const Array* operator->() const { return &**this; }
    explicit operator bool() const { return values_ != nullptr; }

private:
    [[noreturn]] void modified() const;
    std::shared_ptr<const TensorValues> values_;
    std::uint64_t version_ = 0;
    std::weak_ptr<const TensorImpl> tensor_;  // for the error's name and producer only
};
inline Saved saved(const Tensor& t) { return Saved(t); }

// A negative axis counts from the end; anything outside [-n, n) is an Error naming the op.
inline std::size_t normalize_axis(int axis, std::size_t ndim, const char* op, const Shape& shape) {
    const long n = static_cast<long>(ndim);
    const long a = axis < 0 ? axis + n : axis;
    if (a < 0 || a >= n) fail("{}: dim {} is out of range for a tensor of shape {}", op, axis, shape_str(shape));
    return static_cast<std::size_t>(a);
}

// Product of shape[begin, end).
inline std::size_t prod(const Shape& s, std::size_t begin, std::size_t end) {
    std::size_t p = 1;
    for (std::size_t i = begin; i < end; ++i) p *= s[i];
    return p;
}

inline void require_defined(const Tensor& t, const char* op, const char* what) {
    if (!t.defined()) fail("{}: {} is an undefined tensor", op, what);
}

}  // namespace xtgrad::detail
