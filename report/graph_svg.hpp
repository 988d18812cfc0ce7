// The backward graph of a report as SVG, drawn by Graphviz's `dot` when it is installed.
#pragma once

#include <cstddef>
#include <string>

namespace xtgrad::report {

struct Svg {
    std::string svg;   // the <svg> element ("" when not drawn)
    std::string note;  // why not drawn ("" when drawn)
};

// Runs `dot -Tsvg` (io/run_program.hpp: no shell; temporary files in the system's temp folder). A graph of more
// than kMaxDrawnNodes nodes is not drawn (dot would take minutes): the note says to draw one
// module (RunReport::Options::graph_module).
inline constexpr std::size_t kMaxDrawnNodes = 2000;
Svg render_svg(const std::string& dot, std::size_t nodes);

}  // namespace xtgrad::report
