#include <xtgrad/nn/tutorial_a/positional_encoding.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/nn/tutorial_a/checks.hpp>

#include <algorithm>
#include <cmath>

namespace xtgrad::nn::tutorial_a {

namespace {
constexpr const char* kPositionalEncodingType = "PositionalEncoding";
}

Array PositionalEncoding::sinusoid_table(std::size_t d, std::size_t max_seq_len) {
    Array table = xt::zeros<float>({max_seq_len + 1, d});  // row 0 stays zero: PAD
    for (std::size_t p = 1; p <= max_seq_len; ++p) {
        const double pos = static_cast<double>(p - 1);
        for (std::size_t j = 0; j < d; ++j) {
            const double angle = pos / std::pow(10000.0, 2.0 * static_cast<double>(j / 2) / static_cast<double>(d));
            table(p, j) = static_cast<float>(j % 2 == 0 ? std::sin(angle) : std::cos(angle));
        }
    }
    return table;
}

PositionalEncoding::PositionalEncoding(const PositionalEncodingOptions& o) : max_seq_len(o.max_seq_len()) {
    const std::size_t d_model = o.d_model();
    if (d_model == 0 || max_seq_len == 0)
        fail("{}: d_model ({}) and max_seq_len ({}) must be positive", kPositionalEncodingType, d_model, max_seq_len);
    // As the notebook: an nn.Embedding (which draws its N(0, 1) weight, so a seed's later draws
    // match torch's), whose weight is then replaced by the frozen table.
    position_encoding = register_module("position_encoding", std::make_shared<Embedding>(max_seq_len + 1, d_model));
    position_encoding->weight.mutable_data() = sinusoid_table(d_model, max_seq_len);
    position_encoding->weight.requires_grad_(false);
}

Ids PositionalEncoding::positions(const Ids& input_len) const {
    const std::size_t B = check::lengths(*this, kPositionalEncodingType, "input_len", input_len);
    std::int64_t longest = 0;
    for (std::size_t b = 0; b < B; ++b) {
        const std::int64_t len = input_len.data()[b];
        if (len < 0 || len > static_cast<std::int64_t>(max_seq_len))
            module_error(*this, kPositionalEncodingType,
                         fmt::format("input_len[{}] = {} does not fit the positional table of max_seq_len {} "
                                     "(lengths {})",
                                     b, len, max_seq_len, shape_str(input_len.shape())));
        longest = std::max(longest, len);
    }
    Ids pos = xt::zeros<std::int64_t>({B, static_cast<std::size_t>(longest)});
    for (std::size_t b = 0; b < B; ++b)
        for (std::int64_t t = 0; t < input_len.data()[b]; ++t) pos(b, static_cast<std::size_t>(t)) = t + 1;
    return pos;
}

// input_len (B) -> (B, max_len, d)
Tensor PositionalEncoding::forward(const Ids& input_len) const {
    auto scope = enter(input_len);
    return scope.output(position_encoding->forward(positions(input_len)));
}

}  // namespace xtgrad::nn::tutorial_a
