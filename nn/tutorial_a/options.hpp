// The choices of tutorial A's modules that are not sizes (FORMAT.md section 13).
//
// The defaults are what the notebook means; the `literal` values reproduce its code
// exactly, kept only so docs/tutorial_a.md can show what the slips do to the numbers.
#pragma once

#include <string>

namespace xtgrad::nn::tutorial_a {

// How MultiHeadAttention cuts (B, L, h·dk) into heads.
enum class HeadSplit {
    transpose,  // intent: view (B, L, h, dk), transpose to (B, h, L, dk), flatten to (B·h, L, dk)
    literal,    // the notebook's view(B·h, -1, dk) straight from (B, L, d): mixes positions across heads
};

// The factor MultiHeadAttention multiplies the scores by.
enum class ScaleRule {
    sqrt_dk,  // intent (and tutorial A'): dk ** -0.5
    literal,  // the notebook's (dk // h) ** -0.5: divides by the number of heads a second time
};

// Which LayerNorm sits after the residual additions of the attention and the FFN.
enum class LayerNormKind {
    torch,   // nn.LayerNorm(d): biased variance, eps 1e-5 inside the sqrt (the notebook's code)
    custom,  // the notebook's own LayerNorm class: gamma/beta, unbiased std, eps 1e-6 added to the std
};

struct Options {
    HeadSplit split = HeadSplit::transpose;
    ScaleRule scale = ScaleRule::sqrt_dk;
    LayerNormKind layer_norm = LayerNormKind::torch;
};

// Names of the two kernel-1 convolutions of the position-wise FFN: tutorial A calls them
// w1/w2, tutorial C (PoswiseFeedForwardNet) conv1/conv2. Same computation, other state names.
struct ConvNames {
    std::string first = "w1";
    std::string second = "w2";
    static ConvNames tutorial_c() { return {"conv1", "conv2"}; }
};

}  // namespace xtgrad::nn::tutorial_a
