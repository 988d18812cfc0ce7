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

    // The range the colours span: 0..1, or the weights' min..max for auto_range.
    std::pair<float, float> colour_range() const;
    // Every row's attended weights (those above 1e-4) within 25 % of each other.
    bool nearly_uniform() const;
};

// Checks the weights are (queries, keys) and the labels fit; throws an Error naming `who`.
void check_attention_map(const AttentionMap& map, const char* who);

// An SVG file, written atomically: viridis cells with their values, the words on both axes
// (CJK drawn with the system's Noto CJK font), a colour bar, and the scale and "nearly uniform"
// in the subtitle.
void write_attention_svg(const std::string& path, const AttentionMap& map);

// The terminal view: five shade levels ( ░▒▓█) over the same colour range as the SVG, with
// the same legend line.
std::string attention_text(const AttentionMap& map);

// The legend both views print, e.g. "colour scale 0..1 (probabilities); nearly uniform".
std::string attention_legend(const AttentionMap& map);

}  // namespace xtgrad::nn
