// The constructor arguments of torch.nn.TransformerEncoderLayer / TransformerDecoderLayer
// (tutorial D, "Encoder Layer", "Decoder Layer"), as one struct so that a call reads like
// torch's keywords:  TransformerEncoderLayer({.d_model = 512, .nhead = 8})
#pragma once

#include <cstddef>
#include <string>

namespace xtgrad::nn::tutorial_d {

// The FFN activation: relu, or the exact (erf) gelu, torch's F.gelu default.
enum class Activation { relu, gelu };
Activation activation_from_string(const std::string& name);  // "relu" | "gelu"; Error otherwise
const char* to_string(Activation a);

struct TransformerLayerOptions {
    std::size_t d_model = 512;
    std::size_t nhead = 8;
    std::size_t dim_feedforward = 2048;
    float dropout = 0.1f;
    Activation activation = Activation::relu;
    float layer_norm_eps = 1e-5f;
    bool batch_first = false;  // (N, L, E) instead of (L, N, E)
    bool norm_first = false;   // pre-norm: x + f(norm(x)); torch's default (and the tutorial's) is post-norm
};

}  // namespace xtgrad::nn::tutorial_d
