// Tutorial A, "Positional-wise feed forward network的实现": class PositionalWiseFeedForward.
//
//   output = w2(relu(w1(xᵀ)))ᵀ          w1 Conv1d(d -> ff, kernel 1), w2 Conv1d(ff -> d, kernel 1)
//   output = layer_norm(x + dropout(output))
//
// The computation is the shared nn::ConvFeedForward (also tutorial C's PoswiseFeedForwardNet);
// this class gives it the notebook's constructor and state names w1.*, w2.*, layer_norm.*.
//
// Errata: the notebook declares w2 as Conv1d(model_dim, ffn_dim, 1), which cannot take w1's
// ffn_dim channels (and maps to the wrong width); intent, and xtgrad: Conv1d(ffn_dim,
// model_dim, 1). It also calls F.relu without importing torch.nn.functional as F.
#pragma once

#include <xtgrad/nn/conv_feed_forward.hpp>
#include <xtgrad/nn/options.hpp>

namespace xtgrad::nn::tutorial_a {

// PositionalWiseFeedForwardOptions(512, 2048).dropout(0.1f).layer_norm(LayerNormKind::custom)
class PositionalWiseFeedForwardOptions {
public:
    PositionalWiseFeedForwardOptions(std::size_t model_dim, std::size_t ffn_dim)
        : model_dim_(model_dim), ffn_dim_(ffn_dim) {}
    XTGRAD_ARG(std::size_t, model_dim);
    XTGRAD_ARG(std::size_t, ffn_dim);
    XTGRAD_ARG(float, dropout) = 0.f;
    XTGRAD_ARG(LayerNormKind, layer_norm) = LayerNormKind::torch;  // custom: the notebook's own LayerNorm
};

class PositionalWiseFeedForward : public ConvFeedForward {
public:
    explicit PositionalWiseFeedForward(const PositionalWiseFeedForwardOptions& o)
        : ConvFeedForward(ConvFeedForwardOptions(o.model_dim(), o.ffn_dim()).dropout(o.dropout()).layer_norm(o.layer_norm()),
                          "PositionalWiseFeedForward") {}
    // The notebook's PositionalWiseFeedForward(model_dim=512, ffn_dim=2048, dropout=0.0).
    PositionalWiseFeedForward(std::size_t model_dim = 512, std::size_t ffn_dim = 2048, float dropout = 0.f,
                              LayerNormKind layer_norm = LayerNormKind::torch)
        : PositionalWiseFeedForward(PositionalWiseFeedForwardOptions(model_dim, ffn_dim).dropout(dropout).layer_norm(layer_norm)) {}
};

}  // namespace xtgrad::nn::tutorial_a
