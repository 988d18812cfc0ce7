#include <xtgrad/nn/tutorial_a/checks.hpp>

#include <xtgrad/autograd/error.hpp>

namespace xtgrad::nn::tutorial_a::check {

void features(const Module& m, const char* type, const char* what, const Tensor& x, std::size_t d) {
    if (x.dim() != 3 || x.size(2) != d)
        module_error(m, type, fmt::format("{} must be (batch, len, {}), got {}", what, d, shape_str(x.shape())));
}

void mask(const Module& m, const char* type, const char* what, const Mask& mask, const Shape& expected) {
    const Shape got(mask.shape().begin(), mask.shape().end());
    if (got != expected)
        module_error(m, type, fmt::format("{} {} does not match (batch, len_q, len_k) = {}", what, shape_str(got),
                                          shape_str(expected)));
}

void ids(const Module& m, const char* type, const char* what, const Ids& ids, std::size_t num_rows) {
    if (ids.dimension() != 2)
        module_error(m, type, fmt::format("{} must be (batch, len) token ids, got {}", what, shape_str(ids.shape())));
    for (std::size_t i = 0; i < ids.size(); ++i) {
        const std::int64_t id = ids.data()[i];
        if (id < 0 || id >= static_cast<std::int64_t>(num_rows))
            module_error(m, type,
                         fmt::format("{} {}: id {} at ({},{}) is out of range: the embedding has {} rows (ids 0..{}, 0 = PAD)",
                                     what, shape_str(ids.shape()), id, i / ids.shape(1), i % ids.shape(1), num_rows,
                                     num_rows - 1));
    }
}

std::size_t lengths(const Module& m, const char* type, const char* what, const Ids& lengths) {
    const bool column = lengths.dimension() == 2 && lengths.shape(1) == 1;
    if (lengths.dimension() != 1 && !column)
        module_error(m, type, fmt::format("{} must be (batch) or (batch, 1) lengths, got {}", what, shape_str(lengths.shape())));
    return lengths.shape(0);
}

}  // namespace xtgrad::nn::tutorial_a::check
