// Graphviz DOT export of the graph below a tensor (render: dot -Tsvg graph.dot -o graph.svg).
//
// Boxes are backward nodes, labelled with their op and output shape; ellipses are leaves:
// parameters by their dotted name, other inputs as "input". Arrows follow the forward data
// flow, into the op that consumed the tensor. Nodes are grouped into nested clusters by
// module path (subgraph cluster_encoder_layers_0 { label="encoder.layers.0" ... }), so the
// picture has the shape of the model.
//
// A Transformer's graph has thousands of nodes; two options keep one layer readable:
//   module_prefix  draw only nodes of that module and below ("encoder.layers.0"); tensors
//                  coming from elsewhere become dashed "from ..." stubs
//   max_depth      stop this many drawn nodes away from the top; cut tensors become stubs
//
// Walk the graph before it is freed: export after forward, or after
// backward(retain_graph = true). Gradient summaries come from the tensors' own grads
// (leaves, retain_grad()) or, for every node, from a TraceTable collected during backward.
#pragma once

#include <xtgrad/autograd/tensor.hpp>

#include <string>
#include <vector>

namespace xtgrad {

class TraceTable;

// What a drawn node stands for, for pictures that show more than the label on click
// (report/run_report.hpp): `id` is the DOT node id, which Graphviz's SVG keeps as the <title>
// of the node's group.
struct DotNode {
    std::string id;
    std::string kind;                      // "op", "parameter", "input" or "stub"
    std::string op;                        // the backward node's op ("" for leaves)
    std::string module_path;               // the op's module, or the parameter's name
    std::string shape;                     // output shape, "(2,3)"
    std::vector<std::string> input_shapes;
    std::vector<std::string> saved;        // "self: float (2,3) min -1 max 2 mean 0.5", one per saved value
    double grad_norm = -1;                 // L2 norm of the gradient that reached it; -1: unknown
};

struct DotOptions {
    int max_depth = -1;                 // -1: no limit
    std::string module_prefix{};        // "": the whole graph
    bool values = false;                // label tensors with |value| (L2 norm)
    bool grads = false;                 // label with |grad| where known
    const TraceTable* trace = nullptr;  // gradient norms of nodes (with grads = true)
    bool clusters = true;               // group by module path
    std::string title{};                // (the {} let designated initializers skip fields quietly)
    std::vector<DotNode>* nodes = nullptr;  // if set, filled with one entry per drawn node
};

// A module_prefix that no op of the graph is in is an Error naming the prefix and the graph's
// modules where it stops matching (an empty picture otherwise).
std::string to_dot(const Tensor& root, const DotOptions& options = {});
// Writes to_dot() to path; throws an Error if the file cannot be written.
void write_dot(const std::string& path, const Tensor& root, const DotOptions& options = {});
// That check alone, for a caller that must refuse before it does anything (RunReport::backward):
// an Error naming `who` unless prefix is "" or some op below root is in that module.
void check_module_prefix(const Tensor& root, const std::string& prefix, const char* who);

}  // namespace xtgrad
