// The per-(batch, head) block steps the fused attention nodes share (autograd/ops/attention.cpp:
// attention_weights, dropout_matmul; autograd/ops/attention_context.cpp: attention_context).
// Each step is the arithmetic of the separate ops it replaces (the same GEMM calls, softmax rows
// and masks), so every fused node gives the composition's results bit for bit.
#pragma once

#include <xtgrad/autograd/autocast.hpp>
#include <xtgrad/autograd/forward_ad.hpp>
#include <xtgrad/autograd/node.hpp>
#include <xtgrad/autograd/tensor.hpp>
#include <xtgrad/gemm/operand_offset.hpp>

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

// Where block c's rows of a q, k, v, context or gradient operand sit: (L, width) rows ld() floats
// apart from offset(c). Blocks stored one after another ((batch..., L, width): heads = 1) start at
// c·L·width, rows `width` apart. Heads packed along the last dim ((B, L, heads·width), a
// projection's output before split_heads): block c = (b, h), b = c / heads, h = c % heads, starts
// at b·L·heads·width + h·width, rows heads·width apart; the attention reads and writes them there,
// with no split_heads or merge_heads copy.
struct BlockPlace {
    std::size_t L, width, heads = 1;
    std::size_t offset(std::size_t c) const { return (c / heads) * L * heads * width + (c % heads) * width; }
    int ld() const { return static_cast<int>(heads * width); }
    // block c's first element in p (an empty operand's null data stays null: gemm/operand_offset.hpp)
    template <class T>
    T* at(T* p, std::size_t c) const { return detail::offset_or_null(p, static_cast<std::ptrdiff_t>(offset(c))); }
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

// One block c:  q (Lq, d), k (Lk, d) (block c of Q and K, placed as qp and kp) -> w (Lq, Lk)
//   w = q kᵀ · scale;  w[i, j] = fill where masked;  w += additive;  softmax of each row, in place
void weights_block(std::size_t c, const float* Q, const BlockPlace& qp, const float* K, const BlockPlace& kp,
                   float scale, const ScoreMasks& m, const Blocks& b, float* w, const Shape& scores);

// One block c of the weights' backward, dw and w (Lq, Lk), q (Lq, d), k (Lk, d):
//   ds = w ⊙ (dw - Σ_j dw w)          softmax backward, into ds (Lq, Lk); also the additive mask's
//                                     gradient, copied to d_additive + c·Lq·Lk when it is non-null
//   ds = 0 where masked               the filled scores do not depend on q, k
//   dq (Lq, d) = scale · ds k         dk (Lk, d) = scale · dsᵀ q      (into block c of each, placed
//                                     as q and k are)
struct WeightsGrads {
    const GradOut& dq;
    const GradOut& dk;
    float* d_additive;           // null: no gradient wanted
    const bool* masked;          // null: no mask
    const BroadcastIndex& masked_at;
};
void weights_backward_block(std::size_t c, const float* dw, const float* w, const float* Q, const BlockPlace& qp,
                            const float* K, const BlockPlace& kp, float scale, const Blocks& b, const WeightsGrads& out,
                            float* ds);

// One block c: w (Lq, Lk), v (Lk, dv) (block c of V, placed as vp) -> out (Lq, dv) = dropped v,
// into block c of Out (placed as op)
//   dropped = w ⊙ (kept ? keep : 0) as dropout computes it, into work (Lq, Lk); w itself when
//   kept is null (no dropout)
void context_block(std::size_t c, const float* w, const bool* kept, float keep, const float* V, const BlockPlace& vp,
                   const Blocks& b, float* Out, const BlockPlace& op, float* work);

// One block c of context_block's backward, g (Lq, dv) (block c of G, placed as gp), w (Lq, Lk),
// v (Lk, dv) (block c of V, placed as vp), kept (Lq, Lk) or null:
//   dropped = w ⊙ (kept ? keep : 0)            recomputed into work (Lq, Lk), not kept from forward
//   dv (Lk, dv) = droppedᵀ g                   into block c of dV, placed as v (beta dv_beta: 0
//                                              overwrites, 1 adds; null: skipped)
//   dw (Lq, Lk) = (g vᵀ) ⊙ (kept ? keep : 0)   (beta dw_beta; null: skipped); work holds 2·Lq·Lk
void context_backward_block(std::size_t c, const float* G, const BlockPlace& gp, const float* w, const float* V,
                            const BlockPlace& vp, const bool* kept, float keep, const Blocks& b, float* dw,
                            float dw_beta, float* dV, float dv_beta, float* work);

// attention_weights' jvp (ops/attention.cpp): the weights' tangent given w = the weights (..., Lq, Lk)
// and the tangents of q, k and the additive mask (any may be undefined); attention_context's too.
Tensor attention_weights_jvp(const Tensor& q, const Tensor& k, const Tensor& w, float scale, const Mask* masked,
                             const detail::Tangents& t);

}  // namespace xtgrad::attention_detail
