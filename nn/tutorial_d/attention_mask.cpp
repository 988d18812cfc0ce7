#include <xtgrad/nn/tutorial_d/attention_mask.hpp>

#include <xtgrad/autograd/broadcast.hpp>
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/ops.hpp>

#include <xtensor/xbroadcast.hpp>
#include <xtensor/xoperation.hpp>

#include <cstdio>
#include <limits>
#include <mutex>
#include <set>
#include <utility>

namespace xtgrad::nn::tutorial_d {

namespace {
constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

std::vector<long> as_longs(const Shape& s) { return std::vector<long>(s.begin(), s.end()); }
}  // namespace

namespace {
// The handler, set and read under one lock: threads may warn while another sets it.
std::mutex& handler_mutex() {
    static std::mutex mutex;
    return mutex;
}
WarningHandler& warning_handler() {
    static WarningHandler handler;
    return handler;
}
WarningHandler current_warning_handler() {
    const std::lock_guard<std::mutex> lock(handler_mutex());
    return warning_handler();
}
}  // namespace

WarningHandler set_warning_handler(WarningHandler handler) {
    const std::lock_guard<std::mutex> lock(handler_mutex());
    return std::exchange(warning_handler(), std::move(handler));  // the old one is destroyed by the caller, unlocked
}

void warn(const std::string& message) {
    // the user's handler (a copy: it may set another one); what it throws leaves forward as an Error naming it.
    // A warning raised while the handler runs on this thread (it called forward again) is shown the
    // default way, not handed to it again: a handler that runs forward would otherwise recurse
    // until the stack overflows.
    thread_local bool in_handler = false;
    if (const WarningHandler handler = current_warning_handler(); handler && !in_handler) {
        in_handler = true;
        struct Reset {
            ~Reset() { in_handler = false; }
        } reset;
        return xtgrad::detail::call_user_hook([&] { handler(message); }, [&] {
            return fmt::format("tutorial_d::set_warning_handler's handler, given the warning '{}',", message);
        });
    }
    static std::mutex mutex;
    static std::set<std::string> shown;
    const std::lock_guard<std::mutex> lock(mutex);
    if (shown.insert(message).second) std::fprintf(stderr, "UserWarning: %s\n", message.c_str());
}

AttentionMask::AttentionMask(Mask masked) : kind_(Kind::boolean), masked_(std::move(masked)) {}

AttentionMask::AttentionMask(const ByteMask& bytes)
    : kind_(Kind::boolean), from_bytes_(true), masked_(xt::not_equal(bytes, std::uint8_t{0})) {}

AttentionMask::AttentionMask(Tensor additive)
    : kind_(additive.defined() ? Kind::additive : Kind::none), additive_(std::move(additive)) {}

Shape AttentionMask::shape() const {
    switch (kind_) {
        case Kind::boolean: return Shape(masked_.shape().begin(), masked_.shape().end());
        case Kind::additive: return additive_.shape();
        default: return {};
    }
}

const Mask& AttentionMask::masked() const {
    if (kind_ != Kind::boolean) fail("AttentionMask: masked() of a mask that is not boolean");
    return masked_;
}

const Tensor& AttentionMask::additive() const {
    if (kind_ != Kind::additive) fail("AttentionMask: additive() of a mask that is not float");
    return additive_;
}

AttentionMask AttentionMask::reshaped(const Shape& s) const {
    if (kind_ == Kind::additive) return AttentionMask(reshape(additive_, as_longs(s)));
    if (kind_ == Kind::none) return {};
    if (checked_numel(s, "AttentionMask::reshaped") != masked_.size())
        fail("AttentionMask::reshaped: shape {} has {} elements but the mask {} has {}", shape_str(s),
             checked_numel(s, "AttentionMask::reshaped"), shape_str(masked_.shape()), masked_.size());
    Mask m = masked_;
    m.reshape(s);
    return AttentionMask(std::move(m));
}

AttentionMask AttentionMask::with_one_more_key() const {
    if (kind_ == Kind::none) return {};
    const Shape old = shape();
    if (old.empty()) fail("AttentionMask: a 0-d mask has no key axis to extend");
    Shape column = old, padded_shape = old;
    column.back() = 1;
    padded_shape.back() += 1;
    const int last = static_cast<int>(old.size()) - 1;
    if (kind_ == Kind::additive) return AttentionMask(cat({additive_, Tensor::zeros(column)}, last));
    Mask padded = xt::zeros<bool>(padded_shape);  // the new last column stays false (kept)
    const std::size_t keys = old.back(), rows = keys ? masked_.size() / keys : 0;
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t j = 0; j < keys; ++j) padded.data()[r * (keys + 1) + j] = masked_.data()[r * keys + j];
    return AttentionMask(std::move(padded));
}

AttentionMask AttentionMask::merged_with(const AttentionMask& other) const {
    if (!defined()) return other;
    if (!other.defined()) return *this;
    const Shape s = broadcast_shapes(shape(), other.shape(), "attention mask merge");
    if (is_bool() && other.is_bool()) {
        Mask either = xt::broadcast(masked_, s) || xt::broadcast(other.masked_, s);  // logical_or
        return AttentionMask(std::move(either));
    }
    if (is_bool()) return other.merged_with(*this);
    if (other.is_bool()) return AttentionMask(masked_fill(expand(additive_, s), other.masked_, kMinusInf));
    return AttentionMask(additive_ + other.additive_);
}

Tensor AttentionMask::to_additive() const {
    if (kind_ == Kind::additive) return additive_;
    if (kind_ == Kind::none) fail("AttentionMask: to_additive() of an absent mask");
    return masked_fill(Tensor::zeros(shape()), masked_, kMinusInf);
}

std::string mask_shape_str(const AttentionMask& mask) { return mask.defined() ? shape_str(mask.shape()) : "None"; }

}  // namespace xtgrad::nn::tutorial_d
