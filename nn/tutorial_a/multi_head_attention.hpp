// Tutorial A, "Multihead attention的实现": class MultiHeadAttention.
//
//   residual = query
//   k, v, q  = linear_k(key), linear_v(value), linear_q(query)     (B, L, h·dk)
//   split    (B, L, h·dk) -> (B, h, L, dk) -> (B·h, L, dk)          row b·h + head
//   context, attention = dot_product_attention(q, k, v, dk ** -0.5, mask repeated per head)
//   merge    (B·h, Lq, dk) -> (B, h, Lq, dk) -> (B, Lq, h·dk)
//   output   = layer_norm(residual + dropout(linear_final(context)))
//
// forward takes (key, value, query, attn_mask) in that order, as the notebook: note that
// the query, the *last* argument, is also the residual.
//
// Errata, fixed by default and reproducible through Errata (docs/tutorial_a.md):
//  * split (HeadSplit::view_only): the notebook writes key.view(batch*heads, -1, dim_per_head)
//    straight from (B, L, d). A view keeps memory order, so each "head" is a block of
//    consecutive positions and features, not one head's features at every position; the
//    merge view(B, -1, d) undoes the scramble only because it is the same reshape. Its
//    mask.repeat(h, 1, 1) orders blocks head-major, which matches only that literal view.
//    Intent: transpose before flattening (the blog version A' keeps the same slip).
//  * scale (ScaleRule::dk_over_heads): the notebook computes (key.size(-1) // num_heads) ** -0.5
//    after the split, where key.size(-1) is already dk, so it divides by the heads twice
//    (8 ** -0.5 instead of 64 ** -0.5 at d 512, h 8; a division by zero if dk < h).
//    Tutorial A' has the correct dk ** -0.5.
//  * `if attn_mask:` is ambiguous for a tensor in PyTorch; a given mask is applied.
// LayerNormKind::custom swaps nn.LayerNorm for the notebook's own LayerNorm (not a bug).
#pragma once

#include <xtgrad/nn/layers.hpp>
#include <xtgrad/nn/tutorial_a/options.hpp>
#include <xtgrad/nn/tutorial_a/scaled_dot_product_attention.hpp>

#include <functional>
#include <memory>

namespace xtgrad::nn::tutorial_a {

// MultiHeadAttentionOptions(512, 8).dropout(0.1f).split(HeadSplit::view_only)
class MultiHeadAttentionOptions {
public:
    MultiHeadAttentionOptions(std::size_t model_dim, std::size_t num_heads) : model_dim_(model_dim), num_heads_(num_heads) {}
    XTGRAD_ARG(std::size_t, model_dim);
    XTGRAD_ARG(std::size_t, num_heads);
    XTGRAD_ARG(float, dropout) = 0.f;
    XTGRAD_TUTORIAL_A_ERRATA_ARGS;
};

class MultiHeadAttention : public Module {
public:
    explicit MultiHeadAttention(const MultiHeadAttentionOptions& o);
    MultiHeadAttention(std::size_t model_dim = 512, std::size_t num_heads = 8, float dropout = 0.f,
                       const Errata& options = {})
        : MultiHeadAttention(MultiHeadAttentionOptions(model_dim, num_heads).dropout(dropout).errata(options)) {}

    // key, value (B, Lk, d), query (B, Lq, d), attn_mask (B, Lq, Lk) true = masked, or null.
    // Returns {output (B, Lq, d), attention (B·h, Lq, Lk)}.
    AttentionResult forward(const Tensor& key, const Tensor& value, const Tensor& query,
                            const Mask* attn_mask = nullptr) const;

    // The factor the scores are multiplied by: dk ** -0.5, or (dk // h) ** -0.5 when literal.
    float scale() const;

    std::size_t dim_per_head, num_heads;
    Errata options;
    std::shared_ptr<Linear> linear_k, linear_v, linear_q;
    std::shared_ptr<ScaledDotProductAttention> dot_product_attention;
    std::shared_ptr<Linear> linear_final;
    std::shared_ptr<Dropout> dropout;
    std::shared_ptr<Module> layer_norm;  // nn::LayerNorm, or nn::LayerNormUnbiased with LayerNormKind::custom

private:
    Tensor split(const Tensor& x) const;          // (B, L, h·dk) -> (B·h, L, dk)
    Tensor merge(const Tensor& context) const;    // (B·h, Lq, dk) -> (B, Lq, h·dk)
    Mask repeat_per_head(const Mask& mask) const; // (B, Lq, Lk) -> (B·h, Lq, Lk), in split's row order
    std::function<Tensor(const Tensor&)> norm_;
};

}  // namespace xtgrad::nn::tutorial_a
