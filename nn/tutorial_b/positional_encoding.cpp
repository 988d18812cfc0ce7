#include <xtgrad/nn/tutorial_b/positional_encoding.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/ops.hpp>

#include <cmath>

namespace xtgrad::nn::tutorial_b {

namespace {
constexpr const char* kPositionalEncodingType = "tutorial_b::PositionalEncoding";

// Every step in float32, as torch: the Python float -(ln 10000 / d) becomes a float32 factor.
Array sinusoid_buffer(std::size_t d_model, std::size_t max_seq_length) {
    Array pe = empty_array({1, max_seq_length, d_model});
    const float factor = static_cast<float>(-(std::log(10000.0) / static_cast<double>(d_model)));
    for (std::size_t i = 0; 2 * i < d_model; ++i) {
        const float div_term = std::exp(static_cast<float>(2 * i) * factor);
        for (std::size_t p = 0; p < max_seq_length; ++p) {
            const float angle = static_cast<float>(p) * div_term;
            pe(0, p, 2 * i) = std::sin(angle);
            pe(0, p, 2 * i + 1) = std::cos(angle);
        }
    }
    return pe;
}
}  // namespace

PositionalEncoding::PositionalEncoding(const PositionalEncodingOptions& o) {
    const std::size_t d_model = o.d_model(), max_seq_length = o.max_seq_length();
    if (d_model == 0 || d_model % 2 != 0)
        fail("{}: d_model must be even and positive (sin and cos columns alternate), got {}", kPositionalEncodingType, d_model);
    if (max_seq_length == 0) fail("{}: max_seq_length must be positive", kPositionalEncodingType);
    pe = register_buffer("pe", Tensor(sinusoid_buffer(d_model, max_seq_length)));
}

Tensor PositionalEncoding::forward(const Tensor& x) const {
    auto scope = enter(x);
    const std::size_t max_len = pe.size(1), d_model = pe.size(2);
    if (x.dim() != 3 || x.size(2) != d_model)
        module_error(*this, kPositionalEncodingType, fmt::format("expected x (batch, len, d_model={}), got {}", d_model, shape_str(x.shape())));
    if (x.size(1) > max_len)
        module_error(*this, kPositionalEncodingType,
                     fmt::format("sequence length {} of x {} is longer than max_seq_length {}", x.size(1),
                                 shape_str(x.shape()), max_len));
    // pe[:, :L] (1, L, d) broadcasts over the batch
    return scope.output(x + slice(pe, 1, 0, static_cast<long>(x.size(1))));
}

}  // namespace xtgrad::nn::tutorial_b
