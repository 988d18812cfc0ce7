// The report page: report/page.html (plain JS, inline SVG and canvas, no network) with a run's
// data embedded as JSON, built into the library by report/embed_page.py.
#pragma once

#include <string>

namespace xtgrad::report {

// The page for `data` (a JSON object, or {"runs": [...]} to compare runs). The JSON is placed
// in a <script type="application/json"> element with every '<' written as \u003c, so no label
// can close the element. live: the page reloads itself every few seconds.
std::string page_html(const std::string& data, bool live);

}  // namespace xtgrad::report
