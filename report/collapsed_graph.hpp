// The report's backward graph collapsed by module: one box per module (two levels below the
// drawn module: "enc_self_attn.W_Q"), its ops counted, arrows where a gradient crosses from one
// to another. A Transformer layer's full graph is ~100 nodes whose labels, fitted to a page's
// width, are too small to read; collapsed, it is ~10 boxes at a readable size. Internal.
#pragma once

#include <xtgrad/autograd/graphviz.hpp>

#include <map>
#include <string>
#include <vector>

namespace xtgrad::report {

struct ModuleBox {
    std::string id;                   // the DOT node id ("m3"), the <title> of its SVG group
    std::string module;               // its module path, or "(inputs)", "(from elsewhere)"
    std::map<std::string, int> ops;   // backward ops in it, by name, counted
    int parameters = 0;
    std::vector<std::string> nodes;   // the full graph's node ids it holds
};

struct CollapsedGraph {
    std::string dot;
    std::vector<ModuleBox> boxes;
};

// From the full graph's DOT (to_dot, whose edges read "tA -> tB;") and its nodes; `prefix` is
// the drawn module (DotOptions::module_prefix, "" for the whole graph).
CollapsedGraph collapse_by_module(const std::string& dot, const std::vector<DotNode>& nodes, const std::string& prefix);

}  // namespace xtgrad::report
