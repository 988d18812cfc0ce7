// A report's data read back from a page or a downloaded JSON (report_compare,
// report::write_comparison): text from a file, so parsed with its nesting bounded and every
// problem an Error naming the source and, where the text is not JSON, the field the parser was
// in. Internal.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace xtgrad::report {

// A valid report nests 6 deep (graph, nodes, a node, its input shapes, ...): 16 leaves room.
inline constexpr int kMaxReportNesting = 16;

// `who` starts each message: "the report data of 'a/report.html'".
nlohmann::json parse_report_data(const std::string& text, const std::string& who);

}  // namespace xtgrad::report
