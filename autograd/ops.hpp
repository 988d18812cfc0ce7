// Every differentiable op of xtgrad, as free functions (PyTorch's torch.* / F.*).
//
// Where each one lives: autograd/ops/<family>.cpp holds an op's forward, its named backward
// and its shape checks; tests/ops/<family>_test.cpp holds its gradcheck. Axes may be
// negative (counted from the end). Every op returns a new contiguous tensor.
#pragma once

#include <xtgrad/autograd/tensor.hpp>

#include <cstdint>
#include <vector>

namespace xtgrad {

class Generator;

// ---- elementwise (ops/elementwise.cpp, ops/activations.cpp); binary ops broadcast ----
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, float b);
Tensor mul(const Tensor& a, float b);
Tensor neg(const Tensor& a);
Tensor pow(const Tensor& a, float exponent);
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor tanh(const Tensor& a);
Tensor relu(const Tensor& a);
enum class GeluApproximation { none, tanh };  // none = exact erf form (torch's default)
Tensor gelu(const Tensor& a, GeluApproximation approximate = GeluApproximation::none);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator+(const Tensor& a, float b);
Tensor operator+(float a, const Tensor& b);
Tensor operator-(const Tensor& a, float b);
Tensor operator-(float a, const Tensor& b);
Tensor operator*(const Tensor& a, float b);
Tensor operator*(float a, const Tensor& b);
Tensor operator/(const Tensor& a, float b);
Tensor operator/(float a, const Tensor& b);

// ---- matrix products (ops/matmul.cpp, through gemm/blas.cpp: oneDNN or OpenBLAS) ----
// a (..., M, K) @ b (..., K, N) -> (..., M, N); batch dims broadcast. A 1-D operand is a row on
// the left, a column on the right (its dim dropped from the result); two 1-D: their dot product, 0-d.
Tensor matmul(const Tensor& a, const Tensor& b);
// alpha · a (..., M, K) @ b (..., N, K)ᵀ -> (..., M, N): matmul(a, transpose(b, -2, -1)) * alpha
// without the transpose copy (the GEMM reads b transposed) or the scaling pass (alpha is the
// GEMM's). Attention's scores q kᵀ · scale use it. Batch dims broadcast as in matmul.
Tensor matmul_nt(const Tensor& a, const Tensor& b, float alpha = 1.f);
// x (..., in) W(out, in)ᵀ + bias(out) -> (..., out); bias may be undefined (F.linear).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());
// linear on the rows [first, first + count) of weight and bias -> (..., count): equals
// linear(x, narrow(weight, 0, first, count), narrow(bias, 0, first, count)) without copying the
// block (tutorial D's packed in_proj_weight (3E, E) gives q, k and v this way); backward writes
// those rows of the weight's and bias's gradients.
Tensor linear_rows(const Tensor& x, const Tensor& weight, const Tensor& bias, std::size_t first, std::size_t count);

// ---- shape (ops/shape.cpp; cat, split, chunk, narrow, slice, index_select in ops/select.cpp) ----
Tensor transpose(const Tensor& a, int dim0, int dim1);
Tensor permute(const Tensor& a, const std::vector<int>& dims);
// reshape, view, unsqueeze and squeeze take the tensor by value: given a temporary (or
// std::move(t)) they relabel its buffer, as torch's views share it; given a tensor still in
// use, they copy it (xtgrad's tensors own contiguous buffers).
Tensor reshape(Tensor a, const std::vector<long>& shape);  // one entry may be -1
Tensor view(Tensor a, const std::vector<long>& shape);     // = reshape (always contiguous)
Tensor contiguous(const Tensor& a);                         // identity: tensors are contiguous
Tensor unsqueeze(Tensor a, int dim);
Tensor squeeze(Tensor a, int dim);
Tensor expand(const Tensor& a, const Shape& shape);
Tensor cat(const std::vector<Tensor>& tensors, int dim);
std::vector<Tensor> split(const Tensor& a, std::size_t split_size, int dim);
std::vector<Tensor> chunk(const Tensor& a, std::size_t chunks, int dim);
Tensor narrow(const Tensor& a, int dim, std::size_t start, std::size_t length);
// Python's a[..., start:end:step, ...] along one axis (non-negative step).
Tensor slice(const Tensor& a, int dim, long start, long end, long step = 1);
Tensor index_select(const Tensor& a, int dim, const Ids& index);

// ---- reductions (ops/reduce.cpp); stddev is torch.std (a function named std would clash with ::std) ----
Tensor sum(const Tensor& a);  // all elements -> shape ()
Tensor sum(const Tensor& a, const std::vector<int>& dims, bool keepdim = false);
Tensor mean(const Tensor& a);
Tensor mean(const Tensor& a, const std::vector<int>& dims, bool keepdim = false);
Tensor var(const Tensor& a, const std::vector<int>& dims, bool unbiased = true, bool keepdim = false);
Tensor stddev(const Tensor& a, const std::vector<int>& dims, bool unbiased = true, bool keepdim = false);
Tensor max(const Tensor& a, int dim, bool keepdim = false);  // values; grad goes to the first max
Ids argmax(const Tensor& a, int dim, bool keepdim = false);

// ---- softmax family (ops/softmax.cpp, row kernels) ----
Tensor softmax(const Tensor& a, int dim);
Tensor log_softmax(const Tensor& a, int dim);

// ---- the attention core (ops/attention.cpp), fused per (batch, head) block ----
// q (..., Lq, d), k (..., Lk, d) with the same batch dims -> weights (..., Lq, Lk) = softmax over
// the keys of (q kᵀ · scale, set to `fill` where `masked` is true, + additive): matmul_nt,
// masked_fill, add and softmax as one node, bit for bit their results, keeping only q, k and the
// weights. `masked` (null: none) and `additive` (undefined: none) broadcast to (..., Lq, Lk); the
// additive mask gets a gradient if it requires one.
Tensor attention_weights(const Tensor& q, const Tensor& k, float scale, const Mask* masked, float fill,
                         const Tensor& additive = Tensor());
// dropout(weights, p, training, gen) @ v as one node: weights (..., Lq, Lk), v (..., Lk, dv) with
// the same batch dims -> (..., Lq, dv). The mask is drawn exactly as dropout draws it (so it
// equals torch's) and kept as bytes; the dropped weights are recomputed in backward, not kept.
Tensor dropout_matmul(const Tensor& weights, const Tensor& v, float p, bool training, Generator& gen);
// Both as one node, for callers that do not read the weights (torch's need_weights=False):
// dropout_matmul(attention_weights(q, k, scale, masked, fill, additive), v, p, training, gen) bit
// for bit, keeping q, k, v and the masks only; backward recomputes each block's weights instead
// of keeping (..., Lq, Lk) of them (ops/attention_context.cpp).
Tensor attention_context(const Tensor& q, const Tensor& k, const Tensor& v, float scale, const Mask* masked, float fill,
                         const Tensor& additive, float p, bool training, Generator& gen);
// attention_context on a multi-head attention's projections as they come, heads packed along the
// last dim: q (B, Lq, H·dk), k (B, Lk, H·dk), v (B, Lk, H·dv) -> (B, Lq, H·dv), equal bit for bit
// to merge_heads(attention_context(split_heads(q, H), split_heads(k, H), split_heads(v, H), ...))
// with masks that broadcast to the scores (B, H, Lq, Lk), and with no copy of any head.
Tensor attention_context_heads(const Tensor& q, const Tensor& k, const Tensor& v, std::size_t heads, float scale,
                               const Mask* masked, float fill, const Tensor& additive, float p, bool training,
                               Generator& gen);

// ---- normalisation (ops/layer_norm.cpp, fused row kernels) ----
// torch's layer norm over the last dim: (x - mean) / sqrt(var + eps) * weight + bias, biased
// variance; weight and bias (d) may be undefined.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps = 1e-5f);

// ---- masking (ops/mask.cpp) ----
// Where mask is true, the result is `value` (finite or -inf); mask broadcasts to a's shape.
Tensor masked_fill(const Tensor& a, const Mask& mask, float value);
Tensor triu(const Tensor& a, long diagonal = 0);  // zero below the diagonal (last two dims)
Tensor tril(const Tensor& a, long diagonal = 0);  // zero above the diagonal

// ---- lookup, regularisation, losses, convolution ----
// weight (V, d), ids (...) -> (..., d). The padding_idx row gets no gradient (-1: none).
Tensor embedding(const Tensor& weight, const Ids& ids, long padding_idx = -1);
// Inverted dropout: in training zero each element with probability p and scale the rest
// by 1/(1-p); identity otherwise.
Tensor dropout(const Tensor& a, float p, bool training, Generator& gen);
// dropout(relu(a), p, training, gen) as one node (ops/relu_dropout.cpp), bit for bit, with the
// same draws from gen: one pass over a instead of two, relu's output never made, two bits per
// element kept. A feed-forward's hidden layer takes it (nn::Dropout::forward_relu, nn/layers.hpp).
Tensor relu_dropout(const Tensor& a, float p, bool training, Generator& gen);
// logits (N, C), target (N): mean over rows whose target != ignore_index of the
// (label-smoothed) negative log-likelihood, as F.cross_entropy. Given temporary logits (or
// std::move(logits)), backward's probabilities are written over them.
Tensor cross_entropy(Tensor logits, const Ids& target, long ignore_index = -100, float label_smoothing = 0.f);
// x (B, Cin, L), weight (Cout, Cin, K), bias (Cout) or undefined -> (B, Cout, L + 2p - K + 1).
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), std::size_t padding = 0);

}  // namespace xtgrad
