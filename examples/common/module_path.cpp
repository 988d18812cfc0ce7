#include "examples/common/module_path.hpp"

#include "examples/common/cli.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

namespace xtgrad::examples {

void check_module_path(const nn::Module& model, const std::string& path) {
    if (path.empty()) return;  // the whole model
    const nn::Module* at = &model;
    for (std::size_t start = 0;;) {
        const std::size_t dot = path.find('.', start);
        const std::string name = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        const nn::Module* next = nullptr;
        for (const auto& [child_name, child] : at->named_children())
            if (child_name == name) next = child;
        if (next == nullptr) break;
        at = next;
        if (dot == std::string::npos) return;
        start = dot + 1;
    }
    const std::string shown = cli::shown(path.size() > 80 ? path.substr(0, 80) + "..." : path);
    std::vector<std::string> children;
    for (const auto& [child_name, child] : at->named_children()) children.push_back(child->path());
    if (children.empty())
        cli::usage_error("--module '{}' names no module of the model; '{}' has no sub-modules (draw it with --module {})", shown,
                         at->path(), at->path());
    cli::usage_error("--module '{}' names no module of the model; {}: {}", shown,
                     at == &model ? std::string("its modules are") : fmt::format("the modules under '{}' are", at->path()),
                     fmt::join(children, ", "));
}

}  // namespace xtgrad::examples
