// AttentionMask: one optional mask argument of torch.nn.MultiheadAttention and the
// Transformer classes (attn_mask, key_padding_mask, src_mask, tgt_mask, memory_mask ...).
//
// Tutorial D, "遮挡机制": a mask is either
//   boolean   true = this key is not attended: its score becomes -inf before the softmax
//   float     additive: added to the scores (0 keeps, -inf masks, other values are biases)
// and None when absent. A byte mask (ByteMask, torch's uint8: nonzero = masked) is taken as
// torch 1.13 takes it: as attn_mask, converted to bool with torch's deprecation warning
// ("Byte tensor for attn_mask in nn.MultiheadAttention is deprecated. Use bool tensor
// instead."); as key_padding_mask, refused with torch's error (1.13 no longer converts it).
// A query whose keys are all masked with -inf has no finite score: torch returns NaN for
// it, xtgrad's softmax throws an Error naming the row.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <xtgrad/autograd/array.hpp>
#include <xtgrad/autograd/tensor.hpp>

namespace xtgrad::nn::tutorial_d {

// xtgrad's allocator, as Array's (autograd/array.hpp): xt::xarray's default one takes its
// alignment, and so this constructor's mangled name, from the user's -march flags.
using ByteMask = RowMajorArray<std::uint8_t>;

// torch's warnings.warn for the deprecated byte masks: by default printed to stderr as
// "UserWarning: MESSAGE", once per message per process (Python's default filter shows a
// warning once per place). A handler, when set, receives every one instead; an exception it
// throws leaves the call as an Error naming the handler (an Error as it is). A warning raised
// while the handler runs on the same thread (it called forward again) is shown the default way,
// not handed to it again. Setting it while other threads warn is safe; it is called without a
// lock, so a handler shared by threads must be safe to call from each. Returns the previous
// handler (empty: the default).
using WarningHandler = std::function<void(const std::string&)>;
WarningHandler set_warning_handler(WarningHandler handler);
void warn(const std::string& message);

class AttentionMask {
public:
    AttentionMask() = default;           // None
    AttentionMask(Mask masked);          // boolean: true = masked out (implicit, as torch takes either)
    AttentionMask(const ByteMask& bytes);  // uint8, deprecated: nonzero = masked out (see above)
    AttentionMask(Tensor additive);      // float, added to the scores; never differentiated

    bool defined() const { return kind_ != Kind::none; }
    bool is_bool() const { return kind_ == Kind::boolean; }
    bool from_bytes() const { return from_bytes_; }  // made from a ByteMask (now boolean)
    Shape shape() const;
    std::size_t dim() const { return shape().size(); }
    const Mask& masked() const;       // the boolean mask (is_bool() only)
    const Tensor& additive() const;   // the float mask (defined and !is_bool() only)

    // The same values in another shape with as many elements (row-major, as torch's view).
    AttentionMask reshaped(const Shape& shape) const;

    // One more key, never masked: a column of false (boolean) or 0 (float) appended to the last
    // axis, torch's pad(mask, (0, 1)) for the key that add_bias_kv / add_zero_attn append.
    AttentionMask with_one_more_key() const;

    // torch's merge of attn_mask and key_padding_mask, generalised: two boolean masks are
    // OR-ed; if either is float the result is float, a boolean part becoming -inf
    // (masked_fill) and float parts adding up. Shapes broadcast. None is the identity.
    AttentionMask merged_with(const AttentionMask& other) const;

    // The additive form: a boolean mask becomes 0 (kept) / -inf (masked).
    Tensor to_additive() const;

private:
    enum class Kind { none, boolean, additive };
    Kind kind_ = Kind::none;
    bool from_bytes_ = false;
    Mask masked_;
    Tensor additive_;
};

// "(7,3)" or "None", for error messages.
std::string mask_shape_str(const AttentionMask& mask);

}  // namespace xtgrad::nn::tutorial_d
