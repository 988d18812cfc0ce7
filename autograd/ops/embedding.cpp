// embedding: a row gather from the table, and its backward, a scatter-add into the table.
//   weight (V, d), ids (...) -> out (..., d);  dweight[ids[i]] += dout[i]
// The row padding_idx is read in forward like any row but never receives a gradient, so a
// padding row never trains (torch.nn.Embedding's padding_idx).
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/autograd/ops/common.hpp>

#include <algorithm>

namespace xtgrad {

Tensor embedding(const Tensor& weight, const Ids& ids, long padding_idx) {
    detail::require_defined(weight, "embedding", "the weight");
    if (weight.dim() != 2) fail("embedding: weight must be 2-D (num_embeddings, dim), got {}", shape_str(weight.shape()));
    const std::size_t V = weight.size(0), d = weight.size(1);
    if (padding_idx >= static_cast<long>(V) || padding_idx < -1)
        fail("embedding: padding_idx {} is out of range for {} embeddings", padding_idx, V);
    const std::int64_t* id = ids.data();
    for (std::size_t i = 0; i < ids.size(); ++i)
        if (id[i] < 0 || id[i] >= static_cast<std::int64_t>(V))
            fail("embedding: id {} at position {} is out of range for a table of {} rows (ids shape {})", id[i], i, V,
                 shape_str(ids.shape()));
    Shape out_shape(ids.shape().begin(), ids.shape().end());
    out_shape.push_back(d);
    Array out = empty_array(out_shape);
    const float* w = weight.ptr();
    for (std::size_t i = 0; i < ids.size(); ++i)
        std::copy(w + id[i] * d, w + (id[i] + 1) * d, out.data() + i * d);
    return detail::with_jvp(differentiable(make_result(std::move(out), "EmbeddingBackward", {weight}, {{"indices", ids}},
                       [padding_idx, V, d](Node& self, const Array& g) {
                           const Ids& indices = self.saved_ids("indices");
                           // dweight (V, d) += scatter of g (n, d): a scatter-add reads what it adds to
                           float* dw = self.grad_out(0, {V, d}).zeroed();
                           const std::int64_t* id = indices.data();
                           for (std::size_t i = 0; i < indices.size(); ++i) {
                               if (id[i] == padding_idx) continue;
                               float* row = dw + id[i] * d;
                               const float* gr = g.data() + i * d;
                               for (std::size_t j = 0; j < d; ++j) row[j] += gr[j];
                           }
                       }),
        // in ops: g's rows (the padding id's zeroed) added into zeros (V, d) at the ids
        [padding_idx, V, d](const Node& self, const Tensor& g) -> Grads {
            const Ids& indices = self.saved_ids("indices");
            std::vector<std::size_t> rows(indices.size());
            Array kept = empty_array({indices.size(), 1});
            for (std::size_t i = 0; i < indices.size(); ++i) {
                rows[i] = static_cast<std::size_t>(indices.data()[i]);
                kept(i, 0) = indices.data()[i] == padding_idx ? 0.f : 1.f;
            }
            const Tensor g2 = mul(reshape(g, {static_cast<long>(indices.size()), static_cast<long>(d)}), Tensor(std::move(kept)));
            return {detail::scatter_add_rows(g2, std::move(rows), V)};
        }),
        // jvp: a lookup is linear in the table; the padding row is looked up like any other
        {&weight}, [&](const detail::Tangents& t) { return embedding(t[0], ids, padding_idx); });
}

}  // namespace xtgrad
