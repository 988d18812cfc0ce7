#include <xtgrad/nn/tutorial_d/sublayers.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/ops.hpp>

namespace xtgrad::nn::tutorial_d {

Tensor feed_forward(const Linear& linear1, const Dropout& dropout, const Linear& linear2, const Activation& activation,
                    const Tensor& x) {
    const Tensor hidden = linear1.forward(x);
    // relu and dropout as one node where Dropout decides so (the same values and gradients)
    if (activation.is_library_relu()) return linear2.forward(dropout.forward_relu(hidden));
    return linear2.forward(dropout.forward(activation(hidden)));
}

Tensor residual(const Tensor& x, const std::function<Tensor(const Tensor&)>& sublayer, const Dropout& dropout,
                const LayerNorm& norm, bool norm_first) {
    if (norm_first) return x + dropout.forward(sublayer(norm.forward(x)));
    return norm.forward(x + dropout.forward(sublayer(x)));
}

void check_layer_input(const Module& layer, const char* layer_type, const char* name, const Tensor& x,
                       std::size_t d_model, bool batch_first) {
    // (L, E) is unbatched, as torch 1.13 takes it (batch_first does not apply to it)
    if (!x.defined() || (x.dim() != 2 && x.dim() != 3) || x.size(-1) != d_model)
        module_error(layer, layer_type,
                     fmt::format("{} must be {} or unbatched (L, E) with E = d_model = {}, got {}", name,
                                 batch_first ? "(N, L, E) (batch_first)" : "(L, N, E)", d_model,
                                 x.defined() ? shape_str(x.shape()) : "an undefined tensor"));
}

}  // namespace xtgrad::nn::tutorial_d
