// Inference's transposed weights: a Linear's forward y = x·Wᵀ run as x·(Wᵀ) on a copy of W kept
// transposed, one per version (autograd/versioned_copies.hpp).
//
// oneDNN 2.6 runs A·Bᵀ below its A·B on the same shapes on some CPUs: on the Zen 4, tutorial D's
// forward products 95-109 GFLOP/s against 104-115 on one thread, and a thread's half of a product
// on two threads 95 against 114 (bench/narrow_product_probe, "y = x Wᵀ"). Transposing W costs a
// pass over it, about what one product gains, so it pays only where W stays the same between
// products: under NoGradGuard (evaluation, greedy decoding, the benchmarks' inference), where
// linear_block_value asks gemm (nt_faster_as_nn, gemm/blas.hpp) and uses a copy from here. Only
// parameters (leaves that require grad) get a copy, and only while grad mode is off: a Linear's
// forward with grad mode on drops every copy (training writes the weights each step, and the
// copies would add the weights' size to training's peak memory).
#pragma once

#include <xtgrad/autograd/array.hpp>
#include <xtgrad/autograd/tensor.hpp>

#include <cstddef>
#include <memory>

namespace xtgrad::detail {

// W (out, in) as Wᵀ (in, out), row-major.
using TransposedCopy = std::shared_ptr<const Array>;

// Wᵀ of `weight`'s current values (transposed over the pool on a miss); null when `weight` is not a
// 2-D leaf that requires grad. The caller keeps the pointer while it reads the copy.
TransposedCopy transposed_weight(const Tensor& weight);

// Drops every copy (cheap when there are none).
void drop_transposed_weights();

// What the cache did since it was last dropped: tests check one transpose per version.
struct TransposedWeightCounts {
    std::size_t transposes = 0;  // copies made
    std::size_t hits = 0;        // copies reused
    std::size_t held = 0;        // copies held now
};
TransposedWeightCounts transposed_weight_counts();

}  // namespace xtgrad::detail
