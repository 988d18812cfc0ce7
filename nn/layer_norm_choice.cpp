#include <xtgrad/nn/layer_norm_choice.hpp>

#include <xtgrad/nn/layers.hpp>

namespace xtgrad::nn {

LayerNormChoice make_layer_norm(LayerNormKind kind, std::size_t model_dim) {
    if (kind == LayerNormKind::custom) {
        auto ln = std::make_shared<LayerNormUnbiased>(model_dim);  // epsilon 1e-6, as the notebook
        return {ln, [ln](const Tensor& x) { return ln->forward(x); }};
    }
    auto ln = std::make_shared<LayerNorm>(model_dim);  // nn.LayerNorm(model_dim): eps 1e-5
    return {ln, [ln](const Tensor& x) { return ln->forward(x); }};
}

}  // namespace xtgrad::nn
