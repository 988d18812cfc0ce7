// TraceTable: a backward pass as a table to read (XTGRAD_TRACE's lines, with the bookkeeping).
//
//   TraceTable table;          // collects the backward passes run on this thread while alive
//   loss.backward();
//   fmt::print("{}", table.str());
//
// One row per node, in the order the engine ran them: the op, its module, the gradient
// flowing into it (shape and L2 norm) and where that gradient came from. When a tensor feeds
// several consumers (a residual, Q = K = V in self-attention) its gradient is the sum of one
// contribution per consumer: the row says "sum of 3: #4 #9 #12", the steps that produced them.
// When a node's gradient for an input had a broadcast shape, Node::accumulate summed it back
// to the input's shape: the row notes "reduced (1,7,16) -> (16) for input 1 'fc.bias'".
// After the nodes, one row per leaf that received a gradient (parameters by name), with the
// steps it came from and whether it was added onto a gradient from an earlier backward.
#pragma once

#include <xtgrad/autograd/engine.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace xtgrad {

class TraceTable : private detail::BackwardObserver {
public:
    struct Row {
        std::size_t step;
        std::string op, module_path;
        std::string tensor;                     // name of the tensor whose gradient flows in, if any
        Shape grad_shape;
        double grad_norm;
        std::vector<std::size_t> from;          // steps that contributed to that gradient; empty: the seed
        std::vector<std::string> reductions;    // broadcast gradients this node reduced
};
    struct Leaf {
        std::string name;                       // "" for an unnamed input
        Shape shape;
        double grad_norm;                       // of its whole gradient after the pass
        std::vector<std::size_t> from;
        bool onto_earlier;                      // added to a gradient left by an earlier backward
    };

    TraceTable();
    ~TraceTable() override;
    TraceTable(const TraceTable&) = delete;
    TraceTable& operator=(const TraceTable&) = delete;

    const std::vector<Row>& rows() const { return rows_; }
    const std::vector<Leaf>& leaves() const { return leaves_; }
    // The row of the step where `op` ran (first match, or null), for tests and examples.
    const Row* find(const std::string& op, const std::string& module_path = "") const;
    // Norm of the gradient that flowed into this node (by address; the graph must still exist).
    bool grad_norm_of(const Node* node, double& norm) const;

    std::string str() const;
    void print(std::FILE* out = stdout) const;

private:
    void begin() override;
    void before_node(std::size_t step, const Node& node, const TensorImpl& output, const Array& grad) override;
    void accumulated(const Node& node, std::size_t input, const Shape& from, bool summed) override;
    void end() override;

    std::vector<Row> rows_;
    std::vector<Leaf> leaves_;
    std::unordered_map<const Node*, std::size_t> row_of_node_;
    // Per pass: the steps that added into each tensor's gradient, and the leaves reached.
    std::unordered_map<const TensorImpl*, std::vector<std::size_t>> from_;
    std::unordered_map<const TensorImpl*, bool> onto_earlier_;
    std::vector<std::shared_ptr<TensorImpl>> leaves_reached_;
    std::size_t current_step_ = 0;
    detail::ObserverScope observing_{this};  // last: listed once the table is built, removed first
};

}  // namespace xtgrad
