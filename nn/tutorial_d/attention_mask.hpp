// AttentionMask: one optional mask argument of torch.nn.MultiheadAttention and the
// Transformer classes (attn_mask, key_padding_mask, src_mask, tgt_mask, memory_mask ...).
//
// Tutorial D, "遮挡机制": a mask is either
//   boolean   true = this key is not attended: its score becomes -inf before the softmax
//   float     additive: added to the scores (0 keeps, -inf masks, other values are biases)
// and None when absent. torch also accepts uint8 (deprecated: it converts it to bool);
// xtgrad's masks are xtgrad::Mask (bool) or a float Tensor, so there is nothing to convert.
// A query whose keys are all masked with -inf has no finite score: torch returns NaN for
// it, xtgrad's softmax throws an Error naming the row.
#pragma once

#include <xtgrad/autograd/tensor.hpp>

namespace xtgrad::nn::tutorial_d {

class AttentionMask {
public:
    AttentionMask() = default;           // None
    AttentionMask(Mask masked);          // boolean: true = masked out (implicit, as torch takes either)
    AttentionMask(Tensor additive);      // float, added to the scores; never differentiated

    bool defined() const { return kind_ != Kind::none; }
    bool is_bool() const { return kind_ == Kind::boolean; }
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
    Mask masked_;
    Tensor additive_;
};

// "(7,3)" or "None", for error messages.
std::string mask_shape_str(const AttentionMask& mask);

}  // namespace xtgrad::nn::tutorial_d
