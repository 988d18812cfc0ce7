// The options of torch.nn's layers (nn/layers.hpp), named and spelled as the PyTorch C++
// frontend's (torch::nn::LinearOptions, ...; nn/options.hpp): required sizes as constructor
// arguments, the rest chained setters with torch's defaults.
//   LinearOptions(512, 2048).bias(false)          EmbeddingOptions(100, 16).padding_idx(0)
//   Conv1dOptions(512, 2048, 1).padding(0)        LayerNormOptions(512).eps(1e-6f)
// Only what xtgrad's layers implement is an option (Conv1d: stride 1, no dilation or groups).
#pragma once

#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/random/random.hpp>
#include <xtgrad/nn/options.hpp>

#include <cstddef>
#include <optional>

namespace xtgrad::nn {

class LinearOptions {
public:
    LinearOptions(std::size_t in_features, std::size_t out_features) : in_features_(in_features), out_features_(out_features) {}
    XTGRAD_ARG(std::size_t, in_features);
    XTGRAD_ARG(std::size_t, out_features);
    XTGRAD_ARG(bool, bias) = true;
};

class EmbeddingOptions {
public:
    EmbeddingOptions(std::size_t num_embeddings, std::size_t embedding_dim)
        : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
    XTGRAD_ARG(std::size_t, num_embeddings);
    XTGRAD_ARG(std::size_t, embedding_dim);
    // As torch: none by default; a negative index counts from the end (-1 is the last row).
    XTGRAD_ARG(std::optional<long>, padding_idx);
};

// torch::nn::EmbeddingFromPretrainedOptions: Embedding::from_pretrained(table, options).
class EmbeddingFromPretrainedOptions {
    XTGRAD_ARG(bool, freeze) = true;
    XTGRAD_ARG(std::optional<long>, padding_idx);
};

class Conv1dOptions {
public:
    Conv1dOptions(std::size_t in_channels, std::size_t out_channels, std::size_t kernel_size)
        : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
    XTGRAD_ARG(std::size_t, in_channels);
    XTGRAD_ARG(std::size_t, out_channels);
    XTGRAD_ARG(std::size_t, kernel_size);
    XTGRAD_ARG(std::size_t, padding) = 0;
    XTGRAD_ARG(bool, bias) = true;
};

// torch's normalized_shape is a list of trailing dims; xtgrad normalises the last one only.
class LayerNormOptions {
public:
    explicit LayerNormOptions(std::size_t normalized_shape) : normalized_shape_(normalized_shape) {}
    XTGRAD_ARG(std::size_t, normalized_shape);
    XTGRAD_ARG(float, eps) = 1e-5f;
};

// Tutorial A's hand-written LayerNorm(features, eps=1e-6).
class LayerNormUnbiasedOptions {
public:
    explicit LayerNormUnbiasedOptions(std::size_t features) : features_(features) {}
    XTGRAD_ARG(std::size_t, features);
    XTGRAD_ARG(float, epsilon) = 1e-6f;
};

class DropoutOptions {
public:
    explicit DropoutOptions(float p = 0.5f) : p_(p) {}
    XTGRAD_ARG(float, p);
    XTGRAD_ARG(Generator*, generator) = nullptr;  // xtgrad's: the masks' generator (default_generator() if null)
};

class GELUOptions {
    XTGRAD_ARG(GeluApproximation, approximate) = GeluApproximation::none;
};

class SoftmaxOptions {
public:
    explicit SoftmaxOptions(int dim) : dim_(dim) {}
    XTGRAD_ARG(int, dim);
};

}  // namespace xtgrad::nn
