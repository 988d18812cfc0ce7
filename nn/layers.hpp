// The building blocks shared by the four tutorials, as torch.nn's layers: same constructor
// arguments, same parameter names (weight, bias; gamma, beta for tutorial A's LayerNorm),
// same default initialisation. Each takes its <Layer>Options (nn/layer_options.hpp); the
// positional constructors, torch's Python signatures, forward to it.
#pragma once

#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/random/random.hpp>
#include <xtgrad/nn/layer_options.hpp>
#include <xtgrad/nn/module.hpp>

namespace xtgrad::nn {

// y = x Wᵀ + b.  weight (out, in), bias (out).  torch.nn.Linear
class Linear : public Module {
public:
    explicit Linear(const LinearOptions& options);
    Linear(std::size_t in_features, std::size_t out_features, bool bias = true)
        : Linear(LinearOptions(in_features, out_features).bias(bias)) {}
    Tensor forward(const Tensor& x) const;  // x (..., in) -> (..., out)
    Tensor weight, bias;                     // bias undefined when constructed without
};

// A lookup table. weight (num_embeddings, dim), N(0, 1) init; the padding_idx row starts
// at zero and never receives a gradient.  torch.nn.Embedding
// The positional constructors' padding_idx -1 means none (torch's None).
class Embedding : public Module {
public:
    explicit Embedding(const EmbeddingOptions& options);
    Embedding(std::size_t num_embeddings, std::size_t embedding_dim, long padding_idx = -1)
        : Embedding(EmbeddingOptions(num_embeddings, embedding_dim).padding_idx(none_if_minus_one(padding_idx))) {}
    // torch.nn.Embedding.from_pretrained: the table as weight; frozen (no gradient) by default.
    static std::shared_ptr<Embedding> from_pretrained(const Tensor& table, const EmbeddingFromPretrainedOptions& options);
    static std::shared_ptr<Embedding> from_pretrained(const Tensor& table, bool freeze = true, long padding_idx = -1) {
        return from_pretrained(table, EmbeddingFromPretrainedOptions().freeze(freeze).padding_idx(none_if_minus_one(padding_idx)));
    }
    Tensor forward(const Ids& ids) const;  // ids (...) -> (..., dim)
    Tensor weight;
    long padding_idx;  // in [0, num_embeddings), or -1: none

private:
    Embedding(const Tensor& table, std::optional<long> padding_idx);  // from_pretrained: no random draws, as torch
    static std::optional<long> none_if_minus_one(long padding_idx) {
        return padding_idx == -1 ? std::nullopt : std::optional<long>(padding_idx);
    }
};

// Cross-correlation over the last axis, stride 1, zero padding.  torch.nn.Conv1d
// weight (out, in, kernel), bias (out).  Input (B, in, L) -> (B, out, L + 2p - k + 1).
class Conv1d : public Module {
public:
    explicit Conv1d(const Conv1dOptions& options);
    Conv1d(std::size_t in_channels, std::size_t out_channels, std::size_t kernel_size, std::size_t padding = 0,
           bool bias = true)
        : Conv1d(Conv1dOptions(in_channels, out_channels, kernel_size).padding(padding).bias(bias)) {}
    Tensor forward(const Tensor& x) const;
    Tensor weight, bias;
    std::size_t padding;
};

// torch.nn.LayerNorm over the last dim: (x - mean) / sqrt(var + eps) * weight + bias,
// biased variance, eps inside the square root (default 1e-5).
class LayerNorm : public Module {
public:
    explicit LayerNorm(const LayerNormOptions& options);
    explicit LayerNorm(std::size_t normalized_shape, float eps = 1e-5f)
        : LayerNorm(LayerNormOptions(normalized_shape).eps(eps)) {}
    Tensor forward(const Tensor& x) const;
    Tensor weight, bias;
    float eps;
};

// Tutorial A's hand-written LayerNorm ("Layer normalization的实现"), reproduced exactly:
//   gamma * (x - mean) / (std + eps) + beta,  std *unbiased* (divides by d - 1),
//   eps = 1e-6 added to the std, not to the variance.
// Not torch's LayerNorm: the two differ most for rows of small spread (docs/tutorial_a.md).
class LayerNormUnbiased : public Module {
public:
    explicit LayerNormUnbiased(const LayerNormUnbiasedOptions& options);
    explicit LayerNormUnbiased(std::size_t features, float epsilon = 1e-6f)
        : LayerNormUnbiased(LayerNormUnbiasedOptions(features).epsilon(epsilon)) {}
    Tensor forward(const Tensor& x) const;
    Tensor gamma, beta;
    float epsilon;
};

// Inverted dropout (torch.nn.Dropout); identity in eval mode. Draws from `gen`
// (default_generator() unless given).
class Dropout : public Module {
public:
    explicit Dropout(const DropoutOptions& options);
    explicit Dropout(float p = 0.5f, Generator* gen = nullptr) : Dropout(DropoutOptions(p).generator(gen)) {}
    Tensor forward(const Tensor& x) const;
    // forward(relu(x)): one relu_dropout node (autograd/ops.hpp) where the choice below makes it
    // and no forward hook is registered on this module (a hook would look for relu's output, which
    // the fused node never makes); else the two ops. Values, gradients and draws are the same.
    Tensor forward_relu(const Tensor& x) const;
    float p;

private:
    Generator* gen_;
};

// Whether Dropout::forward_relu makes one node or two: `automatic` fuses from
// kFusedMinReluDropout elements on and composes below, where the pass saved is microseconds and
// a small model's graph (a sentence a learner steps through) shows ReluBackward and
// DropoutBackward as the tutorials write them. Process-wide, as set_attention_fusion; tests force either path with it.
enum class ReluDropoutFusion { automatic, fused, composed };
inline constexpr std::size_t kFusedMinReluDropout = std::size_t{1} << 16;  // 256 KiB of activations
void set_relu_dropout_fusion(ReluDropoutFusion fusion);
ReluDropoutFusion relu_dropout_fusion();

// torch's ReLUOptions has only `inplace`, which xtgrad has not: no options.
class ReLU : public Module {
public:
    Tensor forward(const Tensor& x) const {
        auto scope = enter(x);
        return scope.output(relu(x));
    }
};

class GELU : public Module {
public:
    explicit GELU(const GELUOptions& options) : approximate(options.approximate()) {}
    explicit GELU(GeluApproximation approximate = GeluApproximation::none)
        : GELU(GELUOptions().approximate(approximate)) {}
    Tensor forward(const Tensor& x) const {
        auto scope = enter(x);
        return scope.output(gelu(x, approximate));
    }
    GeluApproximation approximate;
};

class Softmax : public Module {
public:
    explicit Softmax(const SoftmaxOptions& options) : dim(options.dim()) {}
    explicit Softmax(int dim) : Softmax(SoftmaxOptions(dim)) {}
    Tensor forward(const Tensor& x) const {
        auto scope = enter(x);
        return scope.output(softmax(x, dim));
    }
    int dim;
};

}  // namespace xtgrad::nn
