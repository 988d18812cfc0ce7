// The report page: report/page.html (plain JS, inline SVG and canvas, no network) with a run's
// data embedded as JSON, built into the library by report/embed_page.py.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace xtgrad::report {

// The page for `data` (a JSON object, or {"runs": [...]} to compare runs). The JSON is placed
// in a <script type="application/json"> element with every '<' written as \u003c, so no label
// can close the element. live: the page reloads itself every few seconds.
std::string page_html(const std::string& data, bool live);

// The data a page embeds (read_data without the file); `path` names it in the Error for a page
// that has none.
std::string data_of_page(const std::string& html, const std::string& path);

// The page write_comparison writes (without the file): an Error as write_comparison's for data
// that is not a report's.
std::string comparison_page(const std::vector<std::pair<std::string, std::string>>& named_data);

}  // namespace xtgrad::report
