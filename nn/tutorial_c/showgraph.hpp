// Tutorial C's showgraph(attn), as a library function a program calls: one head of one
// layer's attention weights for one sentence, source words on x (the keys) and target words
// on y (the queries), drawn as an SVG on a fixed 0..1 scale (nn/attention_map.hpp says why).
//
// The tutorial's showgraph always draws the last layer's first head of the first sentence and
// labels the x axis with the source words, also for the decoder's self-attention, whose keys
// are the decoder's own inputs ('S 我 爱 ...'): pass the words of the keys for x.
#pragma once

#include <xtgrad/nn/attention_map.hpp>

#include <string>
#include <vector>

namespace xtgrad::nn::tutorial_c {

struct ShowgraphOptions {
    int layer = -1;         // -1 = the last layer, as the tutorial's attn[-1]
    std::size_t head = 0;   // the tutorial draws head 0
    std::size_t batch = 0;  // ... of the first sentence
    AttentionScale scale = AttentionScale::probability;
    std::string title;      // "" = "layer L, head H"
    // The axis titles (the tutorial's plot has none): what the rows (y) and columns (x) are.
    std::string query_axis = "queries: target words (y)";
    std::string key_axis = "keys: source words (x)";
    // The model's mask for these weights, true = hidden (tutorial C's get_attn_pad_mask, or the
    // decoder's pad-or-later mask): (B, Lq, Lk) as the model builds it, or (Lq, Lk); a default
    // Mask = none. Hidden cells are drawn hatched with "×", apart from weights of 0.
    Mask masked;
};

// attns: one tensor per layer, (B, heads, Lq, Lk), as Transformer::forward returns them.
// Returns the chosen (Lq, Lk) map with its words; throws an Error naming showgraph and the
// layer, head or batch that is out of range, or the words that do not fit.
AttentionMap attention_map(const std::vector<Tensor>& attns, const std::vector<std::string>& x_words,
                           const std::vector<std::string>& y_words, const ShowgraphOptions& options = {});

// attention_map(), written as an SVG to svg_path (atomically); returns the map, so a program
// can also print it with attention_text().
AttentionMap showgraph(const std::vector<Tensor>& attns, const std::vector<std::string>& x_words,
                       const std::vector<std::string>& y_words, const std::string& svg_path,
                       const ShowgraphOptions& options = {});

}  // namespace xtgrad::nn::tutorial_c
