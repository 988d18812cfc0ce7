#include <xtgrad/autograd/transposed_weights.hpp>

#include <xtgrad/autograd/versioned_copies.hpp>
#include <xtgrad/gemm/transpose.hpp>


namespace xtgrad::detail {

namespace {

VersionedCopies<Array, TensorValues::kTransposedCopy>& copies() {
    static VersionedCopies<Array, TensorValues::kTransposedCopy> c;
    return c;
}

// values (out, in) -> (in, out), split over the pool by W's rows
TransposedCopy transpose_values(const TensorValues& values) {
    const std::size_t out = values.array.shape()[0], in = values.array.shape()[1];
    auto copy = std::make_shared<Array>(empty_array({in, out}));
    transpose_on_pool(values.array.data(), static_cast<int>(out), static_cast<int>(in), static_cast<int>(in),
                      copy->data(), static_cast<int>(out));
    return copy;
}

}  // namespace

TransposedCopy transposed_weight(const Tensor& weight) {
    if (!weight.defined() || !weight.is_leaf() || !weight.requires_grad() || weight.dim() != 2) return nullptr;
    const std::shared_ptr<const TensorValues> values = weight.values_ptr();
    if (!values) return nullptr;
    return copies().get(values, transpose_values);
}

void drop_transposed_weights() { copies().clear_if_any(); }

TransposedWeightCounts transposed_weight_counts() {
    const auto c = copies().counts();
    return {c.made, c.reused, c.held};
}

}  // namespace xtgrad::detail
