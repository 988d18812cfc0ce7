#include "nn/attention.hpp"

#include "autograd/broadcast.hpp"
#include "autograd/error.hpp"

namespace xtgrad::nn {

AttentionResult scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                             const AttentionOptions& o) {
    if (q.dim() < 2 || k.dim() < 2 || v.dim() < 2)
        fail("{}: q, k, v need at least 2 dims, got {}, {}, {}", o.who, shape_str(q.shape()), shape_str(k.shape()),
             shape_str(v.shape()));
    if (q.size(-1) != k.size(-1))
        fail("{}: query {} and key {} differ in the last dim (d_k)", o.who, shape_str(q.shape()), shape_str(k.shape()));
    if (k.size(-2) != v.size(-2))
        fail("{}: key {} and value {} differ in length", o.who, shape_str(k.shape()), shape_str(v.shape()));
    // scores (..., Lq, Lk) = q kᵀ · scale in one GEMM per slice: k is read transposed (a GEMM
    // flag, no transpose copy) and the scale is the GEMM's alpha (no extra pass over the scores)
    Tensor scores = matmul_nt(q, k, o.scale);
    if (o.masked) {
        const Shape ms(o.masked->shape().begin(), o.masked->shape().end());
        if (!broadcasts_to(ms, scores.shape()))
            fail("{}: mask of shape {} does not fit the attention scores {} (batch..., len_q, len_k)", o.who,
                 shape_str(ms), shape_str(scores.shape()));
        scores = masked_fill(scores, *o.masked, o.fill);
    }
    if (o.additive) {
        if (!broadcasts_to(o.additive->shape(), scores.shape()))
            fail("{}: float mask of shape {} does not fit the attention scores {}", o.who,
                 shape_str(o.additive->shape()), shape_str(scores.shape()));
        scores = scores + *o.additive;
    }
    Tensor weights = softmax(scores, -1);
    Tensor dropped = o.dropout > 0.f ? dropout(weights, o.dropout, o.training, o.gen ? *o.gen : default_generator()) : weights;
    return {matmul(dropped, v), weights};
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
    const long B = static_cast<long>(x.size(0)), L = static_cast<long>(x.size(2));
    return reshape(transpose(x, 1, 2), {B, L, -1});
}

}  // namespace xtgrad::nn
