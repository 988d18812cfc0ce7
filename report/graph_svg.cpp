#include "report/graph_svg.hpp"

#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

extern char** environ;

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

// Exit status of argv, or -1 if it could not be started.
int run(const std::vector<std::string>& argv) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));  // exec does not write them
    args.push_back(nullptr);
    pid_t pid = 0;
    if (::posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ) != 0) return -1;
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

Svg render_svg(const std::string& dot, std::size_t nodes) {
    if (nodes > kMaxDrawnNodes)
        return {"", fmt::format("{} nodes: too many to lay out here (at most {}); draw one module "
                                "(RunReport::Options::graph_module) or download the DOT file",
                                nodes, kMaxDrawnNodes)};
    TempFile in, out;
    if (in.path.empty() || out.path.empty()) return {"", "no temporary file for Graphviz: the DOT file is downloadable"};
    std::ofstream(in.path) << dot;
    const int status = run({"dot", "-Tsvg", in.path, "-o", out.path});
    if (status < 0) return {"", "Graphviz's dot is not installed: the DOT file is downloadable"};
    if (status != 0) return {"", fmt::format("Graphviz's dot failed (exit status {}): the DOT file is downloadable", status)};
    std::stringstream svg;
    svg << std::ifstream(out.path).rdbuf();
    const std::string text = svg.str();
    const std::size_t start = text.find("<svg");  // after the XML prolog and DOCTYPE
    if (start == std::string::npos) return {"", "Graphviz's dot wrote no SVG: the DOT file is downloadable"};
    return {text.substr(start), ""};
}

}  // namespace xtgrad::report
