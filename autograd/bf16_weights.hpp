// autocast's bf16 copies of the weights (autograd/autocast.hpp): one conversion per version.
//
// A bf16 product reads its operands as bf16, so each fp32 operand is converted first (gemm/blas_bf16.cpp).
// A weight is read by its layer's forward (x·Wᵀ) and again by backward (dx = dy·W), and in both
// it is converted in its stored orientation: the same bf16 values. So the weights — tensors that
// are leaves and require grad, the set torch's autocast caches too — are converted once and
// kept, keyed by their values' identity and version counter (autograd/tensor.hpp): an in-place
// write (an optimizer step, init, loading) bumps the version, and the next product converts the
// new values. A training step therefore converts each weight once; repeated inference converts
// nothing after the first pass.
//
// A Linear's input (an activation) is converted once too (bf16_activation): the layers that read
// the same input (self-attention's W_q, W_k, W_v; cross-attention's W_k, W_v) share one copy, and
// each keeps it for its weight gradient (dW = dyᵀ·x reads x as bf16 anyway), so backward converts
// no input again and the fp32 input is not kept for it (torch's autocast keeps its cast copy the
// same way). The cache holds no activation copy alive: the layers' backward closures do.
//
// A weight's copy is kept in its values (autograd/versioned_copies.hpp), so it goes with the
// tensor, and is replaced by its next version: at most one bf16 copy — half the fp32 bytes — of
// each weight used under autocast.
#pragma once

#include <xtgrad/autograd/array_allocator.hpp>
#include <xtgrad/autograd/tensor.hpp>

#include <xtensor/xstorage.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace xtgrad::autocast {

// A tensor's values as bf16 bits, packed in its stored (row-major) order. Storage as the arrays':
// uninitialised until converted into (a zero fill was a pass as long as the conversion), and big
// copies come from the block cache, so a step's copies reuse the last step's pages.
using Bf16Values = xt::uvector<std::uint16_t, ArrayAllocator<std::uint16_t>>;
using Bf16Copy = std::shared_ptr<const Bf16Values>;

// The bf16 copy of `weight`'s current values (converting them if this version has none yet);
// null when `weight` is not a leaf that requires grad (those are converted per product). The
// caller keeps the returned pointer for as long as it reads the copy (a backward closure does).
Bf16Copy bf16_weight(const Tensor& weight);

// The bf16 copy of activation `x`'s current values, shared with the other products that read the
// same values and version while any of them holds it (converted over the pool on a miss).
Bf16Copy bf16_activation(const Tensor& x);

// What the cache did since the last clear: tests check one conversion per version.
struct WeightCacheStats {
    std::size_t conversions = 0;  // copies made (a miss: new tensor or new version)
    std::size_t hits = 0;         // copies reused
    std::size_t entries = 0;      // copies held now
    std::size_t activation_conversions = 0;  // bf16_activation's misses
    std::size_t activation_hits = 0;         // and its copies shared
};
WeightCacheStats weight_cache_stats();

// Drops every copy and zeroes the counts (copies still held by a graph stay alive until it goes).
void clear_weight_cache();

}  // namespace xtgrad::autocast
