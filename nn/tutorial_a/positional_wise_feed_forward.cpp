#include "nn/tutorial_a/positional_wise_feed_forward.hpp"

#include "autograd/error.hpp"
#include "nn/tutorial_a/checks.hpp"
#include "nn/tutorial_a/layer_norm_choice.hpp"

namespace xtgrad::nn::tutorial_a {

PositionalWiseFeedForward::PositionalWiseFeedForward(std::size_t model_dim, std::size_t ffn_dim, float dropout_p,
                                                     LayerNormKind layer_norm_kind, const ConvNames& names) {
    if (model_dim == 0 || ffn_dim == 0)
        fail("PositionalWiseFeedForward: model_dim ({}) and ffn_dim ({}) must be positive", model_dim, ffn_dim);
    if (names.first.empty() || names.second.empty() || names.first == names.second)
        fail("PositionalWiseFeedForward: the two convolutions need two distinct names, got '{}' and '{}'", names.first,
             names.second);
    w1 = register_module(names.first, std::make_shared<Conv1d>(model_dim, ffn_dim, 1));
    w2 = register_module(names.second, std::make_shared<Conv1d>(ffn_dim, model_dim, 1));  // the notebook: (model_dim, ffn_dim)
    dropout = register_module("dropout", std::make_shared<Dropout>(dropout_p));
    LayerNormChoice ln = make_layer_norm(layer_norm_kind, model_dim);
    layer_norm = register_module("layer_norm", ln.module);
    norm_ = ln.forward;
}

// x (B, L, d) -> (B, L, d)
Tensor PositionalWiseFeedForward::forward(const Tensor& x) const {
    auto scope = enter(x);
    check::features(*this, "PositionalWiseFeedForward", "x", x, w1->weight.size(1));
    Tensor output = transpose(x, 1, 2);                      // (B, d, L): channels first
    output = w2->forward(relu(w1->forward(output)));         // (B, ff, L) -> (B, d, L)
    output = dropout->forward(transpose(output, 1, 2));      // (B, L, d)
    return scope.output(norm_(x + output));
}

}  // namespace xtgrad::nn::tutorial_a
