// The choices of tutorial A's modules that are not sizes (docs/fixtures.md, section Errata and variants).
//
// The defaults are what the notebook means; the other values, named for what they compute,
// reproduce its code exactly, kept so docs/tutorial_a.md can show what the slips do to the numbers.
#pragma once

#include <xtgrad/nn/layer_norm_choice.hpp>
#include <xtgrad/nn/options.hpp>

namespace xtgrad::nn::tutorial_a {

// How MultiHeadAttention cuts (B, L, h·dk) into heads.
enum class HeadSplit {
    transpose,  // intent: view (B, L, h, dk), transpose to (B, h, L, dk), flatten to (B·h, L, dk)
    view_only,  // the notebook's code: view(B·h, -1, dk) straight from (B, L, d), no transpose: mixes positions across heads
};

// The factor MultiHeadAttention multiplies the scores by.
enum class ScaleRule {
    sqrt_dk,  // intent (and tutorial A'): dk ** -0.5
    dk_over_heads,  // the notebook's code: (dk // h) ** -0.5, divides by the number of heads a second time
};

// Which LayerNorm sits after the residual additions of the attention and the FFN (shared
// with nn::ConvFeedForward): LayerNormKind::torch (the notebook's code) or ::custom.
using nn::LayerNormKind;

// The three errata switches together, as the positional constructors take them (Errata{} = the intent).
struct Errata {
    HeadSplit split = HeadSplit::transpose;
    ScaleRule scale = ScaleRule::sqrt_dk;
    LayerNormKind layer_norm = LayerNormKind::torch;
};

// The same switches as fields of a module's <Module>Options (nn/options.hpp), e.g.
// MultiHeadAttentionOptions(512, 8).split(HeadSplit::view_only); errata() bundles them, and
// errata(Errata) sets the three at once (the positional constructors' last argument).
#define XTGRAD_TUTORIAL_A_ERRATA_ARGS                                          \
    XTGRAD_ARG(HeadSplit, split) = HeadSplit::transpose;                       \
    XTGRAD_ARG(ScaleRule, scale) = ScaleRule::sqrt_dk;                         \
    XTGRAD_ARG(LayerNormKind, layer_norm) = LayerNormKind::torch;              \
                                                                               \
public:                                                                        \
    Errata errata() const { return {split_, scale_, layer_norm_}; }          \
    auto& errata(const Errata& o) {                                           \
        split_ = o.split, scale_ = o.scale, layer_norm_ = o.layer_norm;        \
        return *this;                                                          \
    }                                                                          \
                                                                               \
private:                                                                       \
    static_assert(true)

}  // namespace xtgrad::nn::tutorial_a
