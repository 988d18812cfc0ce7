// The options of tutorial A's EncoderLayer/DecoderLayer and Encoder/Decoder, as the PyTorch
// C++ frontend spells options (nn/options.hpp); Tag makes the encoder's and the decoder's two
// types. The errata switches (options.hpp) are fields of each.
//   EncoderLayerOptions(512, 8).ffn_dim(1024).dropout(0.1f).layer_norm(LayerNormKind::custom)
//   EncoderOptions(vocab_size, max_seq_len).num_layers(2).model_dim(64).num_heads(4).ffn_dim(128)
#pragma once

#include <xtgrad/nn/options.hpp>
#include <xtgrad/nn/tutorial_a/multi_head_attention.hpp>
#include <xtgrad/nn/tutorial_a/options.hpp>
#include <xtgrad/nn/tutorial_a/positional_wise_feed_forward.hpp>

#include <cstddef>

// The model's sizes, the notebook's positional arguments after the vocabulary sizes, with its
// defaults: fields of the stacks' options and of TransformerOptions (their dropouts differ).
#define XTGRAD_TUTORIAL_A_SIZE_ARGS               \
    XTGRAD_ARG(std::size_t, num_layers) = 6;      \
    XTGRAD_ARG(std::size_t, model_dim) = 512;     \
    XTGRAD_ARG(std::size_t, num_heads) = 8;       \
    XTGRAD_ARG(std::size_t, ffn_dim) = 2048

namespace xtgrad::nn::tutorial_a {

template <class Tag>
class LayerOptionsOf {
public:
    LayerOptionsOf(std::size_t model_dim, std::size_t num_heads) : model_dim_(model_dim), num_heads_(num_heads) {}
    XTGRAD_ARG(std::size_t, model_dim);
    XTGRAD_ARG(std::size_t, num_heads);
    XTGRAD_ARG(std::size_t, ffn_dim) = 2048;  // the notebook's EncoderLayer default is 2018, a typo (errata)
    XTGRAD_ARG(float, dropout) = 0.f;
    XTGRAD_TUTORIAL_A_ERRATA_ARGS;

public:
    // The sub-layers' options: both attentions of a decoder layer take the same.
    MultiHeadAttentionOptions attention() const {
        return MultiHeadAttentionOptions(model_dim_, num_heads_).dropout(dropout_).errata(errata());
    }
    PositionalWiseFeedForwardOptions feed_forward() const {
        return PositionalWiseFeedForwardOptions(model_dim_, ffn_dim_).dropout(dropout_).layer_norm(layer_norm_);
    }
};

using EncoderLayerOptions = LayerOptionsOf<struct EncoderLayerTag>;
using DecoderLayerOptions = LayerOptionsOf<struct DecoderLayerTag>;

template <class Tag>
class StackOptionsOf {
public:
    StackOptionsOf(std::size_t vocab_size, std::size_t max_seq_len) : vocab_size_(vocab_size), max_seq_len_(max_seq_len) {}
    XTGRAD_ARG(std::size_t, vocab_size);
    XTGRAD_ARG(std::size_t, max_seq_len);
    XTGRAD_TUTORIAL_A_SIZE_ARGS;
    XTGRAD_ARG(float, dropout) = 0.f;
    XTGRAD_TUTORIAL_A_ERRATA_ARGS;

public:
    // Every layer of the stack: layer<EncoderLayerOptions>() or layer<DecoderLayerOptions>().
    template <class LayerOptions>
    LayerOptions layer() const {
        return LayerOptions(model_dim_, num_heads_).ffn_dim(ffn_dim_).dropout(dropout_).errata(errata());
    }
};

using EncoderOptions = StackOptionsOf<struct EncoderTag>;
using DecoderOptions = StackOptionsOf<struct DecoderTag>;

// The notebook's positional arguments after the vocabulary sizes, set on the options of a
// stack or of the Transformer (their positional constructors and TransformerOptions::stack).
template <class StackOptions>
StackOptions with_sizes(StackOptions o, std::size_t num_layers, std::size_t model_dim, std::size_t num_heads,
                        std::size_t ffn_dim, float dropout, const Errata& errata) {
    o.num_layers(num_layers).model_dim(model_dim).num_heads(num_heads).ffn_dim(ffn_dim).dropout(dropout).errata(errata);
    return o;
}

}  // namespace xtgrad::nn::tutorial_a
