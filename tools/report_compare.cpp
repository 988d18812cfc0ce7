// report_compare: one page comparing training runs, their curves overlaid (docs/report.md).
//
//   build/tools/report_compare lesson/report.html fixed/report.html -o compare.html --names lesson,fixed
//
// Each input is a run's report.html (RunReport, OUT/report.html of the examples) or the JSON
// downloaded from one ("data (JSON)"); an input that is not one is an Error naming the file (and
// the field, where its text is not JSON).
#include <xtgrad/autograd/error.hpp>
#include "examples/common/cli.hpp"
#include <xtgrad/report/run_report.hpp>

#include "examples/common/cli11.hpp"
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace xtgrad;

namespace {

std::string data_of(const std::string& path) {
    if (!path.ends_with(".json")) return report::read_data(path);
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("report_compare: cannot open '{}'", path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> inputs, names;
    std::string out = "compare.html";
    CLI::App app{"Compare training runs on one page: their loss and learning-rate curves overlaid.", "report_compare"};
    app.add_option("reports", inputs, "two or more report.html files (or their downloaded JSON)")->required()->expected(2, 16)
        ->check(CLI::ExistingFile);
    app.add_option("-o,--out", out, "the comparison page to write (atomically)")->capture_default_str();
    // one argument, split here: CLI11's delimiter read `--names=, -o page.html` as two names, "-o"
    // and "page.html", and wrote compare.html
    std::string names_text;
    app.add_option("--names", names_text, "a name per run, comma-separated (default: the files' folder names)");
    return cli::run_main(app, argc, argv, [&] {
        if (app.count("--names")) {
            for (std::size_t start = 0;;) {
                const std::size_t comma = names_text.find(',', start);
                names.push_back(names_text.substr(start, comma - start));
                if (names.back().empty()) cli::usage_error("--names: name {} is empty (in '{}')", names.size(), names_text);
                if (comma == std::string::npos) break;
                start = comma + 1;
            }
            if (names.size() != inputs.size())
                cli::usage_error("--names has {} names for {} reports", names.size(), inputs.size());
        }
        std::vector<std::pair<std::string, std::string>> runs;
        for (std::size_t i = 0; i < inputs.size(); ++i) {
            const std::filesystem::path p(inputs[i]);
            const std::string name = !names.empty() ? names[i]
                                     : p.has_parent_path() ? p.parent_path().filename().string() : p.stem().string();
            std::string data = data_of(inputs[i]);
            report::check_data(data, fmt::format("the report data of '{}'", inputs[i]));  // errors name the file, not the run
            runs.emplace_back(name, std::move(data));
        }
        report::write_comparison(out, runs);
        fmt::print("wrote {}\n", out);
        return cli::kSuccess;
    });
}
