#include <xtgrad/nn/layers.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/nn/init.hpp>

#include <cmath>

namespace xtgrad::nn {

namespace {

// torch's rule: padding_idx in [-num, num), a negative one counting from the end; -1 = none.
long checked_padding_idx(std::optional<long> padding_idx, std::size_t num) {
    if (!padding_idx) return -1;
    const long n = static_cast<long>(num), p = *padding_idx;
    if (p >= n || p < -n) fail("Embedding: padding_idx {} is out of range for {} embeddings", p, num);
    return p < 0 ? p + n : p;
}

float checked_eps(const Module& m, const char* type, const char* name, float eps) {
    if (!(eps >= 0.f && std::isfinite(eps)))
        module_error(m, type, fmt::format("{} must be a finite number >= 0, got {}", name, eps));
    return eps;
}

// A layer norm normalizes over the last axis, whose size its parameters fix.
void check_last_axis(const Module& m, const char* type, const Tensor& x, const char* what, std::size_t size) {
    if (x.dim() == 0 || x.size(-1) != size)
        module_error(m, type, fmt::format("input {} does not end in {} {}", shape_str(x.shape()), what, size));
}

}  // namespace

Linear::Linear(const LinearOptions& o) {
    const std::size_t in = o.in_features(), out = o.out_features();
    weight = register_parameter("weight", Tensor::zeros({out, in}));
    init::default_weight_init_(weight);
    if (o.bias()) {
        bias = register_parameter("bias", Tensor::zeros({out}));
        init::default_bias_init_(bias, in);
    }
}

Tensor Linear::forward(const Tensor& x) const {
    auto scope = enter(x);
    return scope.output(linear(x, weight, bias));
}

Embedding::Embedding(const EmbeddingOptions& o)
    : padding_idx(checked_padding_idx(o.padding_idx(), o.num_embeddings())) {
    const std::size_t dim = o.embedding_dim();
    weight = register_parameter("weight", Tensor::zeros({o.num_embeddings(), dim}));
    init::normal_(weight);
    if (padding_idx >= 0)
        for (std::size_t j = 0; j < dim; ++j) weight.mutable_data()(static_cast<std::size_t>(padding_idx), j) = 0.f;
}

Embedding::Embedding(const Tensor& table, std::optional<long> padding_idx)
    : padding_idx(checked_padding_idx(padding_idx, table.size(0))) {
    weight = register_parameter("weight", Tensor(table.data(), true));
}

std::shared_ptr<Embedding> Embedding::from_pretrained(const Tensor& table, const EmbeddingFromPretrainedOptions& o) {
    if (table.dim() != 2) fail("Embedding::from_pretrained: the table must be 2-D, got {}", shape_str(table.shape()));
    std::shared_ptr<Embedding> e(new Embedding(table, o.padding_idx()));
    e->weight.requires_grad_(!o.freeze());
    return e;
}

Tensor Embedding::forward(const Ids& ids) const {
    auto scope = enter(ids);
    return scope.output(embedding(weight, ids, padding_idx));
}

Conv1d::Conv1d(const Conv1dOptions& o) : padding(o.padding()) {
    const std::size_t in = o.in_channels(), out = o.out_channels(), k = o.kernel_size();
    if (k == 0) fail("Conv1d: kernel_size must be positive");
    weight = register_parameter("weight", Tensor::zeros({out, in, k}));
    init::default_weight_init_(weight);
    if (o.bias()) {
        bias = register_parameter("bias", Tensor::zeros({out}));
        init::default_bias_init_(bias, in * k);
    }
}

Tensor Conv1d::forward(const Tensor& x) const {
    auto scope = enter(x);
    return scope.output(conv1d(x, weight, bias, padding));
}

LayerNorm::LayerNorm(const LayerNormOptions& o) : eps(checked_eps(*this, "LayerNorm", "eps", o.eps())) {
    weight = register_parameter("weight", Tensor::ones({o.normalized_shape()}));
    bias = register_parameter("bias", Tensor::zeros({o.normalized_shape()}));
}

Tensor LayerNorm::forward(const Tensor& x) const {
    auto scope = enter(x);
    check_last_axis(*this, "LayerNorm", x, "normalized size", weight.numel());
    checked_eps(*this, "LayerNorm", "eps", eps);  // a public member: it may have changed since construction
    return scope.output(layer_norm(x, weight, bias, eps));
}

LayerNormUnbiased::LayerNormUnbiased(const LayerNormUnbiasedOptions& o)
    : epsilon(checked_eps(*this, "LayerNormUnbiased", "epsilon", o.epsilon())) {
    gamma = register_parameter("gamma", Tensor::ones({o.features()}));
    beta = register_parameter("beta", Tensor::zeros({o.features()}));
}

// Written with the primitive ops, line for line as the tutorial's forward.
Tensor LayerNormUnbiased::forward(const Tensor& x) const {
    auto scope = enter(x);
    check_last_axis(*this, "LayerNormUnbiased", x, "features", gamma.numel());
    checked_eps(*this, "LayerNormUnbiased", "epsilon", epsilon);
    Tensor mu = mean(x, {-1}, true);
    Tensor sigma = stddev(x, {-1}, /*unbiased=*/true, true);
    return scope.output(gamma * (x - mu) / (sigma + epsilon) + beta);
}

Dropout::Dropout(const DropoutOptions& o) : p(o.p()), gen_(o.generator()) {
    if (!(p >= 0.f && p <= 1.f)) fail("Dropout: probability must be in [0, 1], got {}", p);
}

Tensor Dropout::forward(const Tensor& x) const {
    auto scope = enter(x);
    return scope.output(dropout(x, p, is_training(), gen_ ? *gen_ : default_generator()));
}

namespace {
ReluDropoutFusion relu_dropout_choice = ReluDropoutFusion::automatic;
}  // namespace

void set_relu_dropout_fusion(ReluDropoutFusion fusion) { relu_dropout_choice = fusion; }
ReluDropoutFusion relu_dropout_fusion() { return relu_dropout_choice; }

Tensor Dropout::forward_relu(const Tensor& x) const {
    const bool fuse = relu_dropout_choice == ReluDropoutFusion::fused ||
                      (relu_dropout_choice == ReluDropoutFusion::automatic && x.defined() &&
                       x.numel() >= kFusedMinReluDropout);
    if (!fuse || has_forward_hooks()) return forward(relu(x));
    auto scope = enter(x);  // the node is this module's, as its DropoutBackward would be
    return scope.output(relu_dropout(x, p, is_training(), gen_ ? *gen_ : default_generator()));
}

}  // namespace xtgrad::nn
