// The building blocks shared by the four tutorials, as torch.nn's layers: same constructor
// arguments, same parameter names (weight, bias; gamma, beta for tutorial A's LayerNorm),
// same default initialisation.
#pragma once

#include "autograd/ops.hpp"
#include "autograd/random.hpp"
#include "nn/module.hpp"

namespace xtgrad::nn {

// y = x Wᵀ + b.  weight (out, in), bias (out).  torch.nn.Linear
class Linear : public Module {
public:
    Linear(std::size_t in_features, std::size_t out_features, bool bias = true);
    Tensor forward(const Tensor& x) const;  // x (..., in) -> (..., out)
    Tensor weight, bias;                     // bias undefined when constructed without
};

// A lookup table. weight (num_embeddings, dim), N(0, 1) init; the padding_idx row starts
// at zero and never receives a gradient.  torch.nn.Embedding
class Embedding : public Module {
public:
    Embedding(std::size_t num_embeddings, std::size_t embedding_dim, long padding_idx = -1);
    // torch.nn.Embedding.from_pretrained: the table as weight; frozen (no gradient) by default.
    static std::shared_ptr<Embedding> from_pretrained(const Tensor& table, bool freeze = true, long padding_idx = -1);
    Tensor forward(const Ids& ids) const;  // ids (...) -> (..., dim)
    Tensor weight;
    long padding_idx;

private:
    Embedding(const Tensor& table, long padding_idx);  // from_pretrained: no random draws, as torch
    void register_weight(const Tensor& table);
};

// Cross-correlation over the last axis, stride 1, zero padding.  torch.nn.Conv1d
// weight (out, in, kernel), bias (out).  Input (B, in, L) -> (B, out, L + 2p - k + 1).
class Conv1d : public Module {
public:
    Conv1d(std::size_t in_channels, std::size_t out_channels, std::size_t kernel_size, std::size_t padding = 0,
           bool bias = true);
    Tensor forward(const Tensor& x) const;
    Tensor weight, bias;
    std::size_t padding;
};

// torch.nn.LayerNorm over the last dim: (x - mean) / sqrt(var + eps) * weight + bias,
// biased variance, eps inside the square root (default 1e-5).
class LayerNorm : public Module {
public:
    explicit LayerNorm(std::size_t normalized_shape, float eps = 1e-5f);
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
    explicit LayerNormUnbiased(std::size_t features, float epsilon = 1e-6f);
    Tensor forward(const Tensor& x) const;
    Tensor gamma, beta;
    float epsilon;
};

// Inverted dropout (torch.nn.Dropout); identity in eval mode. Draws from `gen`
// (default_generator() unless given).
class Dropout : public Module {
public:
    explicit Dropout(float p = 0.5f, Generator* gen = nullptr);
    Tensor forward(const Tensor& x) const;
    float p;

private:
    Generator* gen_;
};

class ReLU : public Module {
public:
    Tensor forward(const Tensor& x) const {
        auto scope = enter(x);
        return scope.output(relu(x));
    }
};

class GELU : public Module {
public:
    explicit GELU(GeluApproximation approximate = GeluApproximation::none) : approximate(approximate) {}
    Tensor forward(const Tensor& x) const {
        auto scope = enter(x);
        return scope.output(gelu(x, approximate));
    }
    GeluApproximation approximate;
};

class Softmax : public Module {
public:
    explicit Softmax(int dim) : dim(dim) {}
    Tensor forward(const Tensor& x) const {
        auto scope = enter(x);
        return scope.output(softmax(x, dim));
    }
    int dim;
};

}  // namespace xtgrad::nn
