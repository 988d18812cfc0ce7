#include <xtgrad/nn/tutorial_c/checks.hpp>

#include <xtgrad/autograd/error.hpp>

namespace xtgrad::nn::tutorial_c::check {

void d_model_positive(const char* type, std::size_t d_model) {
    if (d_model == 0) fail("{}: d_model must be positive (the sinusoid position table needs a column), got 0", type);
}

void token_ids(const Module& m, const char* type, const char* what, const Ids& ids, std::size_t vocab_size,
               std::size_t max_len) {
    if (ids.dimension() != 2)
        module_error(m, type, fmt::format("{} must be (batch, len) ids, got {}", what, shape_str(ids.shape())));
    if (ids.shape(1) > max_len)
        module_error(m, type,
                     fmt::format("{} {} is longer than the position table allows: length {} > max length {}", what,
                                 shape_str(ids.shape()), ids.shape(1), max_len));
    for (std::size_t i = 0; i < ids.size(); ++i)
        if (ids.data()[i] < 0 || ids.data()[i] >= static_cast<std::int64_t>(vocab_size))
            module_error(m, type,
                         fmt::format("{} {} holds id {} at ({}, {}), outside the vocabulary of {} ids", what,
                                     shape_str(ids.shape()), ids.data()[i], i / ids.shape(1), i % ids.shape(1),
                                     vocab_size));
}

}  // namespace xtgrad::nn::tutorial_c::check
