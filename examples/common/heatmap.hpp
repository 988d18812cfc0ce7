// Attention heatmaps, as tutorial C's showgraph draws them with matplotlib: a matrix of
// weights (rows = queries, columns = keys) with the words on both axes.
#pragma once

#include "autograd/array.hpp"

#include <string>
#include <vector>

namespace xtgrad::examples {

// An SVG file (viridis colours, words on both axes — CJK included, rendered with the
// system's Noto CJK font), written atomically.
void write_heatmap_svg(const std::string& path, const Array& weights, const std::vector<std::string>& row_labels,
                       const std::vector<std::string>& col_labels, const std::string& title);

// A compact terminal rendering: one shade character per cell ( ░▒▓█), rows labelled.
std::string text_heatmap(const Array& weights, const std::vector<std::string>& row_labels,
                         const std::vector<std::string>& col_labels);

}  // namespace xtgrad::examples
