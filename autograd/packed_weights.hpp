// Inference's packed weights: under bf16 autocast and NoGradGuard, a Linear's forward y = x·Wᵀ
// reads W from a copy in the layout the GEMM backend's bf16 product reads fastest, one per
// version (autograd/versioned_copies.hpp).
//
// oneDNN's bf16 matmul given W in plain strides copies it into its blocked layout inside every
// call; given the blocked copy, it reads it as it is. Packing costs about a pass over W (a
// 512 x 512 weight: 0.13 ms against 0.09 ms gained per product on the AMX guest), so it pays
// only where W stays the same over products: inference, where linear_block_value asks for a
// copy here (XTGRAD_INFERENCE_WEIGHTS_PACKED, on where oneDNN runs AMX, and on the Zen 4 and 5). A
// training step reads each version once forward and once in backward: there the copies would
// cost more than they gain, and add to the step's memory, so a Linear's forward with grad mode on
// drops every copy, as it drops inference's transposed weights (autograd/transposed_weights.hpp).
//
// A weight read in row blocks (linear_rows: attention's W_q, W_k, W_v in one in_proj_weight)
// keeps a packed copy per block, up to twice the weight's elements per version (blocks past that
// run unpacked). A block is packed from the bf16 copy its caller holds and read only with that
// copy: a caller that read the bf16 copy before a write packs its own again, never leaving the
// old values under the new version. Only parameters (leaves that require grad) get copies.
// Internal.
#pragma once

#include <xtgrad/autograd/bf16_weights.hpp>
#include <xtgrad/autograd/tensor.hpp>

#include <cstddef>
#include <memory>

namespace xtgrad::detail {

// The packed copy of rows [first, first + count) of `weight` (out, in), made from `w16`, its
// bf16 copy of the current version, for products on `rows` rows of x; null when `weight` is not
// a 2-D leaf that requires grad or the backend does not pack. The caller keeps the pointer while
// the product reads it.
std::shared_ptr<const void> packed_bf16_weight(const Tensor& weight, const autocast::Bf16Copy& w16,
                                               std::size_t first, std::size_t count, int rows);

// Drops every copy (cheap when there are none).
void drop_packed_weights();

// What the cache did since it was last dropped: tests check one packing per version and block.
struct PackedWeightCounts {
    std::size_t packed = 0;  // blocks packed
    std::size_t hits = 0;    // blocks reused
    std::size_t held = 0;    // weights with packed blocks now
};
PackedWeightCounts packed_weight_counts();

}  // namespace xtgrad::detail
