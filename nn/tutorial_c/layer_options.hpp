// The options of tutorial C's EncoderLayer and DecoderLayer: the lesson's globals d_model,
// n_heads, d_ff, d_k, d_v, e.g. EncoderLayerOptions(512, 8, 2048, 64, 64). Tag makes the two
// option types distinct, as in the PyTorch C++ frontend.
#pragma once

#include <xtgrad/nn/options.hpp>
#include <xtgrad/nn/tutorial_c/multi_head_attention.hpp>
#include <xtgrad/nn/tutorial_c/poswise_feed_forward_net.hpp>

namespace xtgrad::nn::tutorial_c {

template <class Tag>
class LayerOptionsOf {
public:
    LayerOptionsOf(std::size_t d_model, std::size_t n_heads, std::size_t d_ff, std::size_t d_k, std::size_t d_v)
        : d_model_(d_model), n_heads_(n_heads), d_ff_(d_ff), d_k_(d_k), d_v_(d_v) {}
    XTGRAD_ARG(std::size_t, d_model);
    XTGRAD_ARG(std::size_t, n_heads);
    XTGRAD_ARG(std::size_t, d_ff);
    XTGRAD_ARG(std::size_t, d_k);
    XTGRAD_ARG(std::size_t, d_v);

public:
    MultiHeadAttentionOptions attention() const { return {d_model_, n_heads_, d_k_, d_v_}; }
    PoswiseFeedForwardNetOptions feed_forward() const { return {d_model_, d_ff_}; }
};

using EncoderLayerOptions = LayerOptionsOf<struct EncoderLayerTag>;
using DecoderLayerOptions = LayerOptionsOf<struct DecoderLayerTag>;

}  // namespace xtgrad::nn::tutorial_c
