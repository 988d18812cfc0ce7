// Tutorial A, "Positional-wise feed forward network的实现": class PositionalWiseFeedForward.
// Also tutorial C's PoswiseFeedForwardNet, whose only difference is the state names
// (conv1/conv2: ConvNames::tutorial_c()).
//
//   output = w2(relu(w1(xᵀ)))ᵀ          w1 Conv1d(d -> ff, kernel 1), w2 Conv1d(ff -> d, kernel 1)
//   output = layer_norm(x + dropout(output))
// ᵀ swaps the last two axes: Conv1d wants channels first (B, d, L). A kernel-1 convolution is
// the same linear map applied at every position, hence "position-wise".
//
// Errata: the notebook declares w2 as Conv1d(model_dim, ffn_dim, 1), which cannot take w1's
// ffn_dim channels (and maps to the wrong width); intent, and xtgrad: Conv1d(ffn_dim,
// model_dim, 1). It also calls F.relu without importing torch.nn.functional as F.
#pragma once

#include "nn/layers.hpp"
#include "nn/tutorial_a/options.hpp"

#include <functional>
#include <memory>

namespace xtgrad::nn::tutorial_a {

class PositionalWiseFeedForward : public Module {
public:
    PositionalWiseFeedForward(std::size_t model_dim = 512, std::size_t ffn_dim = 2048, float dropout = 0.f,
                              LayerNormKind layer_norm = LayerNormKind::torch, const ConvNames& names = {});

    Tensor forward(const Tensor& x) const;  // x (B, L, d) -> (B, L, d)

    std::shared_ptr<Conv1d> w1, w2;  // registered as names.first / names.second
    std::shared_ptr<Dropout> dropout;
    std::shared_ptr<Module> layer_norm;  // nn::LayerNorm, or nn::LayerNormUnbiased with LayerNormKind::custom

private:
    std::function<Tensor(const Tensor&)> norm_;
};

}  // namespace xtgrad::nn::tutorial_a
