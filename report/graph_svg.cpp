#include <xtgrad/report/graph_svg.hpp>

#include <xtgrad/io/run_program.hpp>

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

namespace xtgrad::report {

namespace {

// A file made by mkstemp in the temp folder, removed when this goes.
struct TempFile {
    std::string path;
    TempFile() {
        std::string pattern = (std::filesystem::temp_directory_path() / "xtgrad-report-XXXXXX").string();
        const int fd = ::mkstemp(pattern.data());
        if (fd >= 0) ::close(fd), path = pattern;
    }
    ~TempFile() {
        if (!path.empty()) ::unlink(path.c_str());
    }
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;
};

}  // namespace

Svg render_svg(const std::string& dot, std::size_t nodes) {
    if (nodes > kMaxDrawnNodes)
        return {"", fmt::format("{} nodes: too many to lay out here (at most {}); draw one module "
                                "(RunReport::Options::graph_module) or download the DOT file",
                                nodes, kMaxDrawnNodes)};
    TempFile in, out;
    if (in.path.empty() || out.path.empty()) return {"", "no temporary file for Graphviz: the DOT file is downloadable"};
    std::ofstream(in.path) << dot;
    const std::optional<int> status = run_program({"dot", "-Tsvg", in.path, "-o", out.path});
    if (!status) return {"", "Graphviz's dot is not installed: the DOT file is downloadable"};
    if (*status != 0) return {"", fmt::format("Graphviz's dot failed (exit status {}): the DOT file is downloadable", *status)};
    std::stringstream svg;
    svg << std::ifstream(out.path).rdbuf();
    const std::string text = svg.str();
    const std::size_t start = text.find("<svg");  // after the XML prolog and DOCTYPE
    if (start == std::string::npos) return {"", "Graphviz's dot wrote no SVG: the DOT file is downloadable"};
    return {text.substr(start), ""};
}

}  // namespace xtgrad::report
