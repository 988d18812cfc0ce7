#include <xtgrad/report/collapsed_graph.hpp>

#include <fmt/format.h>

#include <set>
#include <sstream>
#include <unordered_map>

namespace xtgrad::report {

namespace {

std::string dot_quoted(const std::string& s) {
    std::string q = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') q += '\\';
        q += c == '\n' ? std::string("\\n") : std::string(1, c);
    }
    return q + "\"";
}

std::size_t path_depth(const std::string& path) {
    if (path.empty()) return 0;
    std::size_t d = 1;
    for (char c : path) d += c == '.';
    return d;
}

// The first `levels` dot-separated parts of a module path.
std::string first_levels(const std::string& path, std::size_t levels) {
    std::size_t at = 0;
    for (std::size_t i = 0; i < levels; ++i) {
        at = path.find('.', at);
        if (at == std::string::npos) return path;
        if (i + 1 < levels) ++at;
    }
    return path.substr(0, at);
}

std::string module_parent(const std::string& name) {
    const std::size_t dot = name.rfind('.');
    return dot == std::string::npos ? "" : name.substr(0, dot);
}

}  // namespace

CollapsedGraph collapse_by_module(const std::string& dot, const std::vector<DotNode>& nodes, const std::string& prefix) {
    const std::size_t levels = path_depth(prefix) + 2;
    CollapsedGraph out;
    std::map<std::string, std::size_t> box_of_module;
    std::unordered_map<std::string, std::size_t> box_of_node;
    for (const DotNode& n : nodes) {
        std::string module = n.kind == "op" ? n.module_path : n.kind == "parameter" ? module_parent(n.module_path) : "";
        if (n.kind == "input") module = "(inputs)";
        else if (n.kind == "stub") module = "(from elsewhere)";
        else if (module.empty()) module = "(outside any module)";
        else module = first_levels(module, levels);
        auto [it, fresh] = box_of_module.try_emplace(module, out.boxes.size());
        if (fresh) out.boxes.push_back({fmt::format("m{}", out.boxes.size()), module, {}, 0, {}});
        ModuleBox& box = out.boxes[it->second];
        if (n.kind == "op") ++box.ops[n.op];
        if (n.kind == "parameter") ++box.parameters;
        box.nodes.push_back(n.id);
        box_of_node[n.id] = it->second;
    }
    // Edges between boxes, counted; "tA -> tB;" is the only form to_dot writes.
    std::map<std::pair<std::size_t, std::size_t>, int> edges;
    std::istringstream lines(dot);
    for (std::string line; std::getline(lines, line);) {
        std::istringstream words(line);
        std::string from, arrow, to;
        if (!(words >> from >> arrow >> to) || arrow != "->") continue;
        if (!to.empty() && to.back() == ';') to.pop_back();
        const auto a = box_of_node.find(from), b = box_of_node.find(to);
        if (a != box_of_node.end() && b != box_of_node.end() && a->second != b->second) ++edges[{a->second, b->second}];
    }
    std::string text = "digraph modules {\n  rankdir=TB;\n"
                       "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#eef3fb\", color=\"#1f6feb\", "
                       "fontname=\"Helvetica\", fontsize=14];\n  edge [color=gray30];\n";
    for (const ModuleBox& box : out.boxes) {
        int ops = 0;
        for (const auto& [op, count] : box.ops) ops += count;
        const std::string shown = !prefix.empty() && box.module.rfind(prefix + ".", 0) == 0 ? box.module.substr(prefix.size() + 1)
                                                                                            : box.module;
        std::string label = shown + "\n" + (ops ? fmt::format("{} op{}", ops, ops == 1 ? "" : "s") : std::string());
        if (box.parameters) label += fmt::format("{}{} parameter{}", ops ? ", " : "", box.parameters, box.parameters == 1 ? "" : "s");
        if (!ops && !box.parameters) label += fmt::format("{} tensor{}", box.nodes.size(), box.nodes.size() == 1 ? "" : "s");
        text += fmt::format("  {} [label={}];\n", box.id, dot_quoted(label));
    }
    for (const auto& [ends, count] : edges)
        text += fmt::format("  {} -> {}{};\n", out.boxes[ends.first].id, out.boxes[ends.second].id,
                            count > 1 ? fmt::format(" [label=\"{}\", fontsize=11]", count) : std::string());
    out.dot = text + "}\n";
    return out;
}

}  // namespace xtgrad::report
