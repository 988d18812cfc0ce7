#include <xtgrad/nn/attention.hpp>

#include <xtgrad/autograd/broadcast.hpp>
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/nn/module.hpp>

#include <fmt/format.h>

#include <functional>
#include <numeric>

namespace xtgrad::nn {

namespace {

AttentionFusion fusion = AttentionFusion::automatic;

// Checked on every path: the composed one only calls dropout for p > 0, which let NaN and
// negative probabilities through while the fused one refused them.
void check_attention_options(const AttentionOptions& o) {
    if (!(o.dropout >= 0.f && o.dropout <= 1.f))
        fail("{}: dropout probability must be in [0, 1], got {}", o.who, o.dropout);
}

// The checks every path shares; errors name the caller (o.who), as before the fused ops.
void check_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& o) {
    if (q.dim() < 2 || k.dim() < 2 || v.dim() < 2)
        fail("{}: q, k, v need at least 2 dims, got {}, {}, {}", o.who, shape_str(q.shape()), shape_str(k.shape()),
             shape_str(v.shape()));
    if (q.size(-1) != k.size(-1))
        fail("{}: query {} and key {} differ in the last dim (d_k)", o.who, shape_str(q.shape()), shape_str(k.shape()));
    if (k.size(-2) != v.size(-2))
        fail("{}: key {} and value {} differ in length", o.who, shape_str(k.shape()), shape_str(v.shape()));
    check_attention_options(o);
}

// The scores' shape (..., Lq, Lk), or an Error when a mask does not fit it.
Shape batch_of(const Tensor& t) {
    const Shape s = t.shape();
    return Shape(s.begin(), s.end() - 2);
}

Shape check_masks(const Tensor& q, const Tensor& k, const AttentionOptions& o) {
    Shape scores = broadcast_shapes(batch_of(q), batch_of(k), "matmul_nt (batch dims)");
    scores.push_back(q.size(-2));
    scores.push_back(k.size(-2));
    if (o.masked) {
        const Shape ms(o.masked->shape().begin(), o.masked->shape().end());
        if (!broadcasts_to(ms, scores))
            fail("{}: mask of shape {} does not fit the attention scores {} (batch..., len_q, len_k)", o.who,
                 shape_str(ms), shape_str(scores));
    }
    if (o.additive && !broadcasts_to(o.additive->shape(), scores))
        fail("{}: float mask of shape {} does not fit the attention scores {}", o.who, shape_str(o.additive->shape()),
             shape_str(scores));
    return scores;
}

bool use_fused(const Tensor& q, const Tensor& k, const Tensor& v, const Shape& scores) {
    if (fusion == AttentionFusion::composed) return false;
    // The fused ops need one (batch, head) block per slice: batch dims that broadcast compose.
    if (batch_of(q) != batch_of(k) || batch_of(k) != batch_of(v)) return false;
    return fusion == AttentionFusion::fused || std::accumulate(scores.begin(), scores.end(), std::size_t{1}, std::multiplies<>()) >= kFusedMinScores;
}

}  // namespace

void set_attention_fusion(AttentionFusion f) { fusion = f; }
AttentionFusion attention_fusion() { return fusion; }

AttentionResult scaled_dot_product_attention_composed(const Tensor& q, const Tensor& k, const Tensor& v,
                                                      const AttentionOptions& o) {
    check_attention(q, k, v, o);
    check_masks(q, k, o);
    // scores (..., Lq, Lk) = q kᵀ · scale in one GEMM per slice: k is read transposed (a GEMM
    // flag, no transpose copy) and the scale is the GEMM's alpha (no extra pass over the scores)
    Tensor scores = matmul_nt(q, k, o.scale);
    if (o.masked) scores = masked_fill(scores, *o.masked, o.fill);
    if (o.additive) scores = scores + *o.additive;
    Tensor weights = softmax(scores, -1);
    Tensor dropped = o.dropout > 0.f ? dropout(weights, o.dropout, o.training, o.gen ? *o.gen : default_generator()) : weights;
    return {matmul(dropped, v), o.weights_after_dropout ? dropped : weights};
}

AttentionResult scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                             const AttentionOptions& o) {
    check_attention(q, k, v, o);
    const Shape scores = check_masks(q, k, o);
    if (!use_fused(q, k, v, scores)) return scaled_dot_product_attention_composed(q, k, v, o);
    Generator& gen = o.gen ? *o.gen : default_generator();
    if (!o.need_weights)
        return {attention_context(q, k, v, o.scale, o.masked, o.fill, o.additive ? *o.additive : Tensor(), o.dropout,
                                  o.training, gen),
                Tensor()};
    Tensor weights = attention_weights(q, k, o.scale, o.masked, o.fill, o.additive ? *o.additive : Tensor());
    if (o.weights_after_dropout && o.training && o.dropout > 0.f) {
        // the dropped weights are an output: materialise them (dropout draws dropout_matmul's mask)
        Tensor dropped = dropout(weights, o.dropout, o.training, gen);
        return {matmul(dropped, v), dropped};
    }
    return {dropout_matmul(weights, v, o.dropout, o.training, gen), weights};
}

Tensor attention_on_packed_heads(const Tensor& q, const Tensor& k, const Tensor& v, std::size_t heads,
                                 const AttentionOptions& o) {
    if (q.dim() != 3 || k.dim() != 3 || heads == 0) return Tensor();  // the split path names the error
    if (!packed_heads_take(q.size(0) * heads * q.size(1) * k.size(1), o.need_weights)) return Tensor();
    check_attention_options(o);
    return attention_context_heads(q, k, v, heads, o.scale, o.masked, o.fill, o.additive ? *o.additive : Tensor(),
                                   o.dropout, o.training, o.gen ? *o.gen : default_generator());
}

bool packed_heads_take(std::size_t scores, bool need_weights) {
    if (need_weights || fusion == AttentionFusion::composed) return false;
    return fusion == AttentionFusion::fused || scores >= kFusedMinScores;
}

Tensor split_heads(const Tensor& x, std::size_t heads) {
    if (x.dim() != 3) fail("split_heads: expected (batch, len, heads·d), got {}", shape_str(x.shape()));
    const std::size_t B = x.size(0), L = x.size(1), D = x.size(2);
    if (heads == 0 || D % heads != 0) fail("split_heads: width {} is not divisible by {} heads", D, heads);
    return transpose(reshape(x, {static_cast<long>(B), static_cast<long>(L), static_cast<long>(heads),
                                 static_cast<long>(D / heads)}),
                     1, 2);
}

Tensor merge_heads(const Tensor& x) {
    if (x.dim() != 4) fail("merge_heads: expected (batch, heads, len, d), got {}", shape_str(x.shape()));
    // Every size named (no -1): an empty batch or sequence has a well-defined h·d too.
    const long B = static_cast<long>(x.size(0)), L = static_cast<long>(x.size(2));
    return reshape(transpose(x, 1, 2), {B, L, static_cast<long>(x.size(1) * x.size(3))});
}

void check_qkv(const Module& m, const char* module_type, const Tensor& Q, const Tensor& K, const Tensor& V,
               std::size_t d_model) {
    for (const Tensor* t : {&Q, &K, &V})
        if (t->dim() != 3 || t->size(2) != d_model)
            module_error(m, module_type,
                         fmt::format("Q, K and V must be (batch, len, d_model={}), got Q {}, K {}, V {}", d_model,
                                     shape_str(Q.shape()), shape_str(K.shape()), shape_str(V.shape())));
    if (K.size(0) != Q.size(0) || V.size(0) != Q.size(0) || K.size(1) != V.size(1))
        module_error(m, module_type,
                     fmt::format("Q, K, V must share the batch and K, V the length, got Q {}, K {}, V {}",
                                 shape_str(Q.shape()), shape_str(K.shape()), shape_str(V.shape())));
}

namespace {
void require_ids(const char* who, const char* what, const Ids& ids) {
    if (ids.dimension() != 2) fail("{}: {} must be (batch, len) token ids, got {}", who, what, shape_str(ids.shape()));
}
}  // namespace

Mask key_padding_mask(const Ids& seq_q, const Ids& seq_k, const char* who) {
    require_ids(who, "seq_q", seq_q);
    require_ids(who, "seq_k", seq_k);
    if (seq_q.shape(0) != seq_k.shape(0))
        fail("{}: seq_q {} and seq_k {} differ in batch size", who, shape_str(seq_q.shape()), shape_str(seq_k.shape()));
    const std::size_t B = seq_q.shape(0), Lq = seq_q.shape(1), Lk = seq_k.shape(1);
    Mask mask = Mask::from_shape({B, Lq, Lk});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t q = 0; q < Lq; ++q)
            for (std::size_t k = 0; k < Lk; ++k) mask(b, q, k) = seq_k(b, k) == 0;
    return mask;
}

Mask subsequent_mask(const Ids& seq, const char* who) {
    require_ids(who, "seq", seq);
    const std::size_t B = seq.shape(0), L = seq.shape(1);
    Mask mask = Mask::from_shape({B, L, L});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t q = 0; q < L; ++q)
            for (std::size_t k = 0; k < L; ++k) mask(b, q, k) = k > q;
    return mask;
}

Mask decoder_self_mask(const Ids& seq, const char* who) {
    return Mask(key_padding_mask(seq, seq, who) || subsequent_mask(seq, who));
}

}  // namespace xtgrad::nn
