#include <xtgrad/nn/tutorial_d/positional_encoding.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/ops.hpp>

#include <cmath>

namespace xtgrad::nn::tutorial_d {

Tensor positional_table(std::size_t len, std::size_t num_features) {
    if (num_features == 0 || num_features % 2 != 0)
        fail("positional_encoding: num_features must be even and positive (sin and cos columns alternate), got {}",
             num_features);
    Array P = empty_array({len, num_features});
    const float E = static_cast<float>(num_features);
    for (std::size_t i = 0; i < num_features / 2; ++i) {
        // every step in float32, as torch: arange(0, E, 2) / E, then 10000 ** that
        const float denominator = std::pow(10000.f, static_cast<float>(2 * i) / E);
        for (std::size_t pos = 0; pos < len; ++pos) {
            const float angle = static_cast<float>(pos) / denominator;
            P(pos, 2 * i) = std::sin(angle);
            P(pos, 2 * i + 1) = std::cos(angle);
        }
    }
    return Tensor(std::move(P));
}

Tensor positional_encoding(const Tensor& X, std::size_t num_features, float dropout_p, std::size_t max_len,
                           int seq_axis, bool training, Generator* gen) {
    if (X.dim() != 3) fail("positional_encoding: expected a 3-D input, got {}", shape_str(X.shape()));
    if (seq_axis != 0 && seq_axis != 1)
        fail("positional_encoding: seq_axis must be 0 ([L, N, E]) or 1 ([N, L, E]), got {}", seq_axis);
    if (X.size(2) != num_features)
        fail("positional_encoding: input {} does not end in num_features {}", shape_str(X.shape()), num_features);
    const std::size_t L = X.size(seq_axis);
    if (L > max_len) fail("positional_encoding: sequence length {} (axis {} of {}) exceeds max_len {}", L, seq_axis,
                          shape_str(X.shape()), max_len);
    if (!(dropout_p >= 0.f && dropout_p <= 1.f)) fail("positional_encoding: dropout_p must be in [0, 1], got {}", dropout_p);
    const Tensor P = positional_table(L, num_features);  // (L, E): broadcasts over [N, L, E]
    const Tensor encoded =
        X + (seq_axis == 1 ? P : reshape(P, {static_cast<long>(L), 1, static_cast<long>(num_features)}));
    return dropout(encoded, dropout_p, training, gen ? *gen : default_generator());
}

}  // namespace xtgrad::nn::tutorial_d
