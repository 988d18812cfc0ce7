#include <xtgrad/report/page.hpp>

#include <xtgrad/io/atomic_file.hpp>
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/report/earlier_steps.hpp>
#include <xtgrad/report/report_data.hpp>
#include <xtgrad/report/run_report.hpp>

#include <nlohmann/json.hpp>

#include <fstream>
#include <ostream>
#include <optional>
#include <sstream>

namespace xtgrad {

namespace report {

extern const char* const kPageHtml;  // report/page.html, generated into the build

namespace {

const std::string kDataOpen = R"(<script type="application/json" id="xtgrad-report-data">)";
const std::string kDataPlaceholder = "XTGRAD_REPORT_DATA";
const std::string kLivePlaceholder = "<!--XTGRAD_REPORT_LIVE-->";

// '<' only occurs inside JSON strings, where \u003c means the same character.
std::string script_safe(const std::string& json) {
    std::string out;
    out.reserve(json.size());
    for (char c : json) {
        if (c == '<') out += "\\u003c";
        else out += c;
    }
    return out;
}

void replace_once(std::string& s, const std::string& what, const std::string& with) {
    const std::size_t at = s.find(what);
    if (at == std::string::npos) fail("report page: the template has no {}", what);
    s.replace(at, what.size(), with);
}

}  // namespace

std::string page_html(const std::string& data, bool live) {
    std::string page = kPageHtml;
    // While the run is live, the page reloads itself every 5 s, from a script of its own so that it
    // reloads even if the page's script fails. Not <meta http-equiv="refresh">: Chromium reloads
    // the address the page was opened with, which drops the selection kept in its #... since.
    replace_once(page, kLivePlaceholder,
                 live ? R"(<script id="xtgrad-live-reload">setTimeout(() => location.reload(), 5000);</script>)" : "");
    replace_once(page, kDataOpen + kDataPlaceholder, kDataOpen + script_safe(data));
    return page;
}

std::string data_of_page(const std::string& html, const std::string& path) {
    const std::size_t start = html.find(kDataOpen);
    const std::size_t end = start == std::string::npos ? start : html.find("</script>", start);
    if (end == std::string::npos) fail("report::read_data: '{}' is not an xtgrad report page (no report data)", path);
    return html.substr(start + kDataOpen.size(), end - start - kDataOpen.size());
}

std::string read_data(const std::string& html_path) {
    // A regular file of a page's size: a fifo would block and /dev/zero grow without end
    constexpr std::uint64_t kMaxPageBytes = std::uint64_t{1} << 30;
    std::optional<FileReader> file;
    try {
        file.emplace(html_path);
    } catch (const Error& e) {
        fail("report::read_data: {}", e.what());
    }
    if (file->size() > kMaxPageBytes)
        fail("report::read_data: '{}' has {} bytes, more than the {} a report page may have", html_path, file->size(),
             kMaxPageBytes);
    std::string html(file->size(), '\0');
    file->read(0, html.data(), html.size());
    return data_of_page(html, html_path);
}

// Every list the page's script reads checked, as a resumed run's page is (report/earlier_steps.cpp):
// a comparison page of data of another shape threw before drawing anything.
void check_data(const std::string& data, const std::string& who) {
    (void)earlier_steps(data, RunReport::kMaxStep, who, /*null_scalars=*/true);
}

std::string comparison_page(const std::vector<std::pair<std::string, std::string>>& named_data) {
    nlohmann::json runs = nlohmann::json::array();
    for (const auto& [name, data] : named_data) {
        const std::string who = fmt::format("report::write_comparison: the data of '{}'", name);
        check_data(data, who);
        nlohmann::json run = parse_report_data(data, who);
        run["name"] = name;
        runs.push_back(std::move(run));
    }
    // run names are the caller's: made valid UTF-8 by `replace` (the data's own strings are already)
    return page_html(
        nlohmann::json{{"format", "xtgrad-report 1"}, {"runs", runs}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
        false);
}

void write_comparison(const std::string& path, const std::vector<std::pair<std::string, std::string>>& named_data) {
    const std::string page = comparison_page(named_data);
    write_file_atomically(path, [&](std::ostream& out) { out << page; });
}

}  // namespace report

}  // namespace xtgrad
