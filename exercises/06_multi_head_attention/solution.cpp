// Exercise 06, solved: the in-projection's three row blocks, heads split by reshape + permute,
// attention per (batch, head), heads merged, out-projection.
#include "exercise.hpp"

#include <cmath>

namespace ex06 {

using namespace xtgrad;

Tensor multi_head_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                            const nn::tutorial_d::MultiheadAttention& m) {
    const auto E = static_cast<long>(m.embed_dim), h = static_cast<long>(m.num_heads);
    const auto hd = static_cast<long>(m.head_dim), N = static_cast<long>(query.size(1));
    // x (L, N, E) -> rows [block·E, (block+1)·E) of the in-projection -> (N, h, L, hd)
    auto heads = [&](const Tensor& x, std::size_t block) {
        const auto L = static_cast<long>(x.size(0));
        Tensor p = linear_rows(x, m.in_proj_weight, m.in_proj_bias, block * m.embed_dim, m.embed_dim);
        return permute(reshape(p, {L, N, h, hd}), {1, 2, 0, 3});
    };
    nn::AttentionOptions options;
    options.scale = 1.f / std::sqrt(static_cast<float>(hd));
    const Tensor context = nn::scaled_dot_product_attention(heads(query, 0), heads(key, 1), heads(value, 2), options)
                               .context;  // (N, h, Lq, hd)
    const Tensor merged = reshape(permute(context, {2, 0, 1, 3}), {static_cast<long>(query.size(0)), N, E});
    return m.out_proj->forward(merged);
}

}  // namespace ex06
