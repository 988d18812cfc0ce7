// The per-(batch, head) block steps the fused attention nodes share (autograd/ops/attention.cpp:
// attention_weights, dropout_matmul; autograd/ops/attention_context.cpp: attention_context).
// Each step is the arithmetic of the separate ops it replaces (the same GEMM calls, softmax rows
// and masks), so every fused node gives the composition's results bit for bit.
#pragma once

#include <xtgrad/autograd/autocast.hpp>
#include <xtgrad/autograd/node.hpp>
#include <xtgrad/autograd/tensor.hpp>

#include <cstddef>
#include <vector>

namespace xtgrad::attention_detail {

// (batch..., Lq, Lk) seen as `count` blocks of (Lq, Lk): block c is batch index c. `operands`:
// the precision of every product of the blocks, forward and backward (bf16 when the node was
// created inside an autocast scope, autograd/autocast.hpp).
struct Blocks {
    std::size_t count, Lq, Lk;
    DType operands = DType::fp32;
    std::size_t size() const { return Lq * Lk; }
};

// Where element (i, j) of block c sits in a mask broadcast to (batch..., Lq, Lk): strides are 0
// along the dims the mask broadcasts, so no broadcast copy is made.
struct BroadcastIndex {
    std::vector<std::size_t> block_offset;  // per block c
    std::size_t row_stride = 0, col_stride = 0;
    std::size_t at(std::size_t c, std::size_t i, std::size_t j) const {
        return block_offset[c] + i * row_stride + j * col_stride;
    }
};
BroadcastIndex broadcast_index(const Shape& from, const Shape& to);

// A scratch buffer of n floats for the calling thread (the pool's threads are persistent, so
// each reuses its own).
float* scratch(std::size_t n);

// a (..., La, d) and b (..., Lb, d') with the same batch dims, else an Error naming op and both.
void require_matrices(const Tensor& a, const Tensor& b, const char* op, const char* names);

// The masks of the scores, with their broadcast layouts. masked / additive are null when absent.
struct ScoreMasks {
    const bool* masked = nullptr;
    BroadcastIndex masked_at;
    float fill = 0.f;
    const float* additive = nullptr;
    BroadcastIndex additive_at;
};
// Checks that the masks broadcast to the scores' shape (an Error naming op and both shapes).
ScoreMasks score_masks(const Shape& scores, const Mask* masked, float fill, const Array* additive, const char* op);

// One block c:  q (Lq, d), k (Lk, d) -> w (Lq, Lk)
//   w = q kᵀ · scale;  w[i, j] = fill where masked;  w += additive;  softmax of each row, in place
void weights_block(std::size_t c, const float* q, const float* k, float scale, const ScoreMasks& m, const Blocks& b,
                   int d, float* w, const Shape& scores);

// One block c of the weights' backward, dw and w (Lq, Lk), q (Lq, d), k (Lk, d):
//   ds = w ⊙ (dw - Σ_j dw w)          softmax backward, into ds (Lq, Lk); also the additive mask's
//                                     gradient, copied to d_additive + c·Lq·Lk when it is non-null
//   ds = 0 where masked               the filled scores do not depend on q, k
//   dq (Lq, d) = scale · ds k         dk (Lk, d) = scale · dsᵀ q      (into block c of each)
struct WeightsGrads {
    const GradOut& dq;
    const GradOut& dk;
    float* d_additive;           // null: no gradient wanted
    const bool* masked;          // null: no mask
    const BroadcastIndex& masked_at;
};
void weights_backward_block(std::size_t c, const float* dw, const float* w, const float* q, const float* k,
                            float scale, const Blocks& b, int d, const WeightsGrads& out, float* ds);

// One block: w (Lq, Lk), v (Lk, dv) -> out (Lq, dv) = dropped v
//   dropped = w ⊙ (kept ? keep : 0) as dropout computes it, into work (Lq, Lk); w itself when
//   kept is null (no dropout)
void context_block(const float* w, const bool* kept, float keep, const float* v, const Blocks& b, int dv, float* out,
                   float* work);

// One block of context_block's backward, g (Lq, dv), w (Lq, Lk), v (Lk, dv), kept (Lq, Lk) or null:
//   dropped = w ⊙ (kept ? keep : 0)            recomputed into work (Lq, Lk), not kept from forward
//   dv_out (Lk, dv) = droppedᵀ g               (beta dv_beta: 0 overwrites, 1 adds; null: skipped)
//   dw (Lq, Lk) = (g vᵀ) ⊙ (kept ? keep : 0)   (beta dw_beta; null: skipped); work holds 2·Lq·Lk
void context_backward_block(const float* g, const float* w, const float* v, const bool* kept, float keep,
                            const Blocks& b, int dv, float* dw, float dw_beta, float* dv_out, float dv_beta,
                            float* work);

}  // namespace xtgrad::attention_detail
