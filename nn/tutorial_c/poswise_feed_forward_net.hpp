// Tutorial C, "4. 代码实现": class PoswiseFeedForwardNet.
//
//   output = conv2(relu(conv1(inputs.transpose(1, 2)))).transpose(1, 2)
//   output = layer_norm(output + inputs)                     (B, L, d)
// conv1 Conv1d(d_model -> d_ff, kernel 1), conv2 Conv1d(d_ff -> d_model, kernel 1).
//
// The computation is the shared nn::ConvFeedForward (also tutorial A's
// PositionalWiseFeedForward, fixture `ffn_conv1d__c_names`); this class gives it the
// lesson's constructor and state names conv1.*, conv2.*, layer_norm.* (torch LayerNorm, no
// dropout). The members keep the block's names: w1 is registered as conv1, w2 as conv2.
#pragma once

#include <xtgrad/nn/conv_feed_forward.hpp>
#include <xtgrad/nn/options.hpp>

namespace xtgrad::nn::tutorial_c {

// PoswiseFeedForwardNetOptions(512, 2048): the lesson's globals d_model and d_ff.
class PoswiseFeedForwardNetOptions {
public:
    PoswiseFeedForwardNetOptions(std::size_t d_model, std::size_t d_ff) : d_model_(d_model), d_ff_(d_ff) {}
    XTGRAD_ARG(std::size_t, d_model);
    XTGRAD_ARG(std::size_t, d_ff);
};

class PoswiseFeedForwardNet : public ConvFeedForward {
public:
    explicit PoswiseFeedForwardNet(const PoswiseFeedForwardNetOptions& o)
        : ConvFeedForward(ConvFeedForwardOptions(o.d_model(), o.d_ff()).conv_names(ConvNames::tutorial_c()),
                          "tutorial_c::PoswiseFeedForwardNet") {}
    PoswiseFeedForwardNet(std::size_t d_model, std::size_t d_ff) : PoswiseFeedForwardNet(PoswiseFeedForwardNetOptions(d_model, d_ff)) {}
};

}  // namespace xtgrad::nn::tutorial_c
