// Attention maps as pictures that tell the truth: an SVG and a terminal view of one map of
// attention weights (rows = queries, columns = keys), drawn the same way.
//
// Attention weights are probabilities (each row sums to 1), so by default colours are on a
// fixed 0..1 scale with a colour bar and the value written in each cell: a map that is 1/7
// everywhere looks flat, as it is. matplotlib's matshow (tutorial C's showgraph) stretches the
// colours over each map's own min..max instead, which draws 0.138..0.147 as strong structure;
// AttentionScale::auto_range keeps that view, labelled as stretched. A map whose attended
// weights all lie within 25 % of each other row by row is called "nearly uniform".
#pragma once

#include <xtgrad/autograd/array.hpp>
#include <xtgrad/autograd/tensor.hpp>

#include <string>
#include <vector>

namespace xtgrad::nn {

enum class AttentionScale {
    probability,  // colours on 0..1 (the default: weights are probabilities)
    auto_range,   // colours stretched over the map's own min..max (matplotlib's matshow)
};

struct AttentionMap {
    Array weights;                        // (queries, keys)
    std::vector<std::string> query_words;  // rows, the y axis
    std::vector<std::string> key_words;    // columns, the x axis
    std::string title;
    AttentionScale scale = AttentionScale::probability;
    // The axis titles: what the rows and columns are ("queries: target words", ...).
    std::string query_axis = "queries (rows)";
    std::string key_axis = "keys (columns)";
    // (queries, keys), true = the model's mask hid this key from this query; a default
    // (0-d) Mask = no mask.
    // Masked cells are drawn apart (hatched grey, "×") rather than as a weight of 0.
    Mask masked;

    // The range the colours span: 0..1, or the weights' min..max for auto_range.
    std::pair<float, float> colour_range() const;
    // Every row's attended weights (those above 1e-4, not masked) within 25 % of each other.
    bool nearly_uniform() const;
    bool has_mask() const { return masked.dimension() != 0; }
    // Whether cell (row, col) is masked; an Error for a cell outside a mask that is given.
    bool is_masked(std::size_t row, std::size_t col) const;
};

// One head's map out of a layer's attention weights, for any tutorial's layout:
//   (B, heads, Lq, Lk)   tutorials B, C and D per head (average_attn_weights=false)
//   (B·heads, Lq, Lk)    tutorial A (row b·heads + head): pass its number of heads
//   (B, Lq, Lk)          tutorial D's head average: heads 0, head 0
// masked: (Lq, Lk), (B, Lq, Lk) or a default Mask (none), true = hidden. Throws an Error naming `who` and the
// batch element, head or shape that does not fit.
AttentionMap select_attention_map(const Tensor& weights, std::size_t heads, std::size_t batch, std::size_t head,
                                  const std::vector<std::string>& query_words, const std::vector<std::string>& key_words,
                                  const Mask& masked, const char* who);

// Checks the weights are (queries, keys), the labels and the mask fit; throws an Error naming `who`.
void check_attention_map(const AttentionMap& map, const char* who);

// An SVG file, written atomically: viridis cells with their values, masked cells hatched grey
// with "×", the words and the axis titles on both axes (CJK drawn with the system's Noto CJK
// font), a colour bar, and the scale, the mask and "nearly uniform" in the subtitle.
void write_attention_svg(const std::string& path, const AttentionMap& map);

// The terminal view: five shade levels ( ░▒▓█) over the same colour range as the SVG, "××"
// for a masked cell, with the axis titles and the same legend line.
std::string attention_text(const AttentionMap& map);

// The legend both views print, e.g. "colour scale 0..1 (probabilities); × masked; nearly uniform".
std::string attention_legend(const AttentionMap& map);

}  // namespace xtgrad::nn
