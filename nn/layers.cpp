#include "nn/layers.hpp"

#include "autograd/error.hpp"
#include "nn/init.hpp"

namespace xtgrad::nn {

Linear::Linear(std::size_t in, std::size_t out, bool with_bias) {
    weight = register_parameter("weight", Tensor::zeros({out, in}));
    init::default_weight_init_(weight);
    if (with_bias) {
        bias = register_parameter("bias", Tensor::zeros({out}));
        init::default_bias_init_(bias, in);
    }
}

Tensor Linear::forward(const Tensor& x) const {
    auto scope = enter(x);
    return scope.output(linear(x, weight, bias));
}

Embedding::Embedding(std::size_t num, std::size_t dim, long padding_idx) : padding_idx(padding_idx) {
    register_weight(Tensor::zeros({num, dim}));
    init::normal_(weight);
    if (padding_idx >= 0)
        for (std::size_t j = 0; j < dim; ++j) weight.data()(static_cast<std::size_t>(padding_idx), j) = 0.f;
}

Embedding::Embedding(const Tensor& table, long padding_idx) : padding_idx(padding_idx) { register_weight(table); }

void Embedding::register_weight(const Tensor& table) {
    const std::size_t num = table.size(0);
    if (padding_idx >= static_cast<long>(num) || padding_idx < -1)
        fail("Embedding: padding_idx {} is out of range for {} embeddings", padding_idx, num);
    weight = register_parameter("weight", Tensor(table.data(), true));
}

std::shared_ptr<Embedding> Embedding::from_pretrained(const Tensor& table, bool freeze, long padding_idx) {
    if (table.dim() != 2) fail("Embedding::from_pretrained: the table must be 2-D, got {}", shape_str(table.shape()));
    std::shared_ptr<Embedding> e(new Embedding(table, padding_idx));
    e->weight.requires_grad_(!freeze);
    return e;
}

Tensor Embedding::forward(const Ids& ids) const {
    auto scope = enter(ids);
    return scope.output(embedding(weight, ids, padding_idx));
}

Conv1d::Conv1d(std::size_t in, std::size_t out, std::size_t k, std::size_t padding, bool with_bias) : padding(padding) {
    if (k == 0) fail("Conv1d: kernel_size must be positive");
    weight = register_parameter("weight", Tensor::zeros({out, in, k}));
    init::default_weight_init_(weight);
    if (with_bias) {
        bias = register_parameter("bias", Tensor::zeros({out}));
        init::default_bias_init_(bias, in * k);
    }
}

Tensor Conv1d::forward(const Tensor& x) const {
    auto scope = enter(x);
    return scope.output(conv1d(x, weight, bias, padding));
}

LayerNorm::LayerNorm(std::size_t d, float eps) : eps(eps) {
    weight = register_parameter("weight", Tensor::ones({d}));
    bias = register_parameter("bias", Tensor::zeros({d}));
}

Tensor LayerNorm::forward(const Tensor& x) const {
    auto scope = enter(x);
    if (x.dim() == 0 || x.size(-1) != weight.numel())
        module_error(*this, "LayerNorm", fmt::format("input {} does not end in normalized size {}", shape_str(x.shape()), weight.numel()));
    return scope.output(layer_norm(x, weight, bias, eps));
}

LayerNormUnbiased::LayerNormUnbiased(std::size_t d, float epsilon) : epsilon(epsilon) {
    gamma = register_parameter("gamma", Tensor::ones({d}));
    beta = register_parameter("beta", Tensor::zeros({d}));
}

// Written with the primitive ops, line for line as the tutorial's forward.
Tensor LayerNormUnbiased::forward(const Tensor& x) const {
    auto scope = enter(x);
    if (x.dim() == 0 || x.size(-1) != gamma.numel())
        module_error(*this, "LayerNormUnbiased", fmt::format("input {} does not end in features {}", shape_str(x.shape()), gamma.numel()));
    Tensor mu = mean(x, {-1}, true);
    Tensor sigma = stddev(x, {-1}, /*unbiased=*/true, true);
    return scope.output(gamma * (x - mu) / (sigma + epsilon) + beta);
}

Dropout::Dropout(float p, Generator* gen) : p(p), gen_(gen) {
    if (!(p >= 0.f && p <= 1.f)) fail("Dropout: probability must be in [0, 1], got {}", p);
}

Tensor Dropout::forward(const Tensor& x) const {
    auto scope = enter(x);
    return scope.output(dropout(x, p, is_training(), gen_ ? *gen_ : default_generator()));
}

}  // namespace xtgrad::nn
