// The attention arithmetic every tutorial shares, written once (docs/derivations.md#attention):
//
//   scores  = q kᵀ · scale                      q (..., Lq, dk), k (..., Lk, dk)
//   scores  = fill where mask is true            (A: -inf, B and C: -1e9, D bool: -inf)
//   scores += additive                           (D's float masks)
//   weights = softmax(scores, over keys)         (..., Lq, Lk)
//   context = dropout(weights) v                 v (..., Lk, dv) -> (..., Lq, dv)
//
// The tutorials' MultiHeadAttention classes differ in names, projections, where the
// residual and norm go and how masks are spelled; they all call this function.
#pragma once

#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/random/random.hpp>

#include <limits>

namespace xtgrad::nn {

class Module;

struct AttentionResult {
    Tensor context;  // (..., Lq, dv)
    Tensor weights;  // (..., Lq, Lk), after softmax; before dropout unless weights_after_dropout
};

struct AttentionOptions {
    float scale = 1.f;
    const Mask* masked = nullptr;    // true = not attended; broadcasts to (..., Lq, Lk)
    float fill = -std::numeric_limits<float>::infinity();
    const Tensor* additive = nullptr;  // added to the scores; broadcasts to (..., Lq, Lk)
    float dropout = 0.f;
    bool training = false;
    Generator* gen = nullptr;          // default_generator() if null
    const char* who = "scaled_dot_product_attention";  // named in errors (module type and path)
    // torch's need_weights: false when the caller never reads AttentionResult::weights. The
    // fused path then makes one node (attention_context) that keeps no weights for backward and
    // leaves `weights` undefined; the composed path returns them anyway.
    bool need_weights = true;
    // Return the weights the context was computed with, dropout included (torch's
    // multi_head_attention_forward in training: tutorial D); A, B and C return them before it.
    bool weights_after_dropout = false;
};

// Built of the fused attention ops (autograd/ops/attention.cpp: attention_weights, then
// dropout_matmul; or attention_context alone without need_weights) or of the separate ops they fuse (matmul_nt, masked_fill, add, softmax, dropout,
// matmul); both give the same values and gradients bit for bit, so the choice changes only the
// graph. `automatic` fuses from kFusedMinScores score elements on (where the (..., Lq, Lk)
// intermediates cost memory and time) and composes below, so a small model's graph (the Winter
// Games sentence that docs/debugging.md walks through) shows each step as its own node. Batch
// dims of q, k, v that broadcast always compose.
AttentionResult scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                             const AttentionOptions& options = {});
// The composition alone: the plain reference the fused ops are tested against.
AttentionResult scaled_dot_product_attention_composed(const Tensor& q, const Tensor& k, const Tensor& v,
                                                      const AttentionOptions& options = {});

enum class AttentionFusion { automatic, fused, composed };
inline constexpr std::size_t kFusedMinScores = std::size_t{1} << 12;  // 16 KiB of scores: a 64×64 block
// Process-wide, as set_num_threads; tests force either path with it.
void set_attention_fusion(AttentionFusion fusion);
AttentionFusion attention_fusion();

// merge_heads(scaled_dot_product_attention(split_heads(q, heads), split_heads(k, heads),
// split_heads(v, heads), options).context), computed on the heads where the projections wrote them
// (attention_context_heads: the same numbers bit for bit, no split or merge copy), where that
// call would make the one-node fused core: options.need_weights false and fusion `fused`, or
// `automatic` with at least kFusedMinScores scores. Undefined elsewhere (the caller then takes
// the split path). q (B, Lq, h·dk), k (B, Lk, h·dk), v (B, Lk, h·dv) -> (B, Lq, h·dv).
Tensor attention_on_packed_heads(const Tensor& q, const Tensor& k, const Tensor& v, std::size_t heads,
                                 const AttentionOptions& options);
// Whether attention_on_packed_heads takes a call with this many score elements (batch · heads ·
// Lq · Lk): for a caller that lays out its projections differently on each path.
bool packed_heads_take(std::size_t scores, bool need_weights);

// (B, L, h·d) -> (B, h, L, d): view (B, L, h, d), then swap L and h.
Tensor split_heads(const Tensor& x, std::size_t heads);
// (B, h, L, d) -> (B, L, h·d), the inverse.
Tensor merge_heads(const Tensor& x);

// The check a batch-first MultiHeadAttention (tutorials B, C) makes of its inputs: Q, K, V
// are (batch, len, d_model), share the batch, and K, V share the length. Throws the module's
// error (module_error: its type and path) naming all three shapes.
void check_qkv(const Module& m, const char* module_type, const Tensor& Q, const Tensor& K, const Tensor& V,
               std::size_t d_model);

// The masks tutorials A and C build from token ids (PAD = id 0), true = not attended; each
// tutorial keeps its own names as wrappers, and `who` names that function in errors.
// seq_q (B, Lq), seq_k (B, Lk) -> (B, Lq, Lk): true where the key seq_k[b, k] is PAD.
Mask key_padding_mask(const Ids& seq_q, const Ids& seq_k, const char* who);
// seq (B, L) -> (B, L, L): true strictly above the diagonal (query i sees keys 0..i).
Mask subsequent_mask(const Ids& seq, const char* who);
// pad OR subsequent: a decoder's self-attention mask.
Mask decoder_self_mask(const Ids& seq, const char* who);

}  // namespace xtgrad::nn
