#include <xtgrad/autograd/trace_table.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/node.hpp>
#include <xtgrad/autograd/tensor.hpp>

#include <algorithm>

namespace xtgrad {

namespace {

std::string steps_str(const std::vector<std::size_t>& from) {
    if (from.empty()) return "seed";
    std::string s = from.size() > 1 ? fmt::format("sum of {}:", from.size()) : "";
    for (std::size_t step : from) s += fmt::format("{}#{}", s.empty() ? "" : " ", step);
    return s;
}

}  // namespace

TraceTable::TraceTable() = default;
TraceTable::~TraceTable() = default;

void TraceTable::begin() {
    from_.clear();
    onto_earlier_.clear();
    leaves_reached_.clear();
}

void TraceTable::before_node(std::size_t step, const Node& node, const TensorImpl& output, const Array& grad) {
    current_step_ = step;
    row_of_node_[&node] = rows_.size();
    auto it = from_.find(&output);
    rows_.push_back({step, node.op(), node.module_path(), output.name, shape_of(grad), l2_norm(grad),
                     it == from_.end() ? std::vector<std::size_t>{} : it->second, {}});
}

void TraceTable::accumulated(const Node& node, std::size_t input, const Shape& from, bool /*summed*/) {
    const ImplPtr& in = node.inputs()[input];
    std::vector<std::size_t>& steps = from_[in.get()];
    if (steps.empty()) {
        onto_earlier_[in.get()] = in->grad != nullptr;  // this pass adds into .grad only at the end
        if (in->grad_fn == nullptr) leaves_reached_.push_back(in);
    }
    steps.push_back(current_step_);
    const Shape to = in->shape();
    if (from != to && !rows_.empty())
        rows_.back().reductions.push_back(fmt::format("reduced {} -> {} for input {}{}", shape_str(from), shape_str(to),
                                                      input, in->name.empty() ? "" : " '" + in->name + "'"));
}

void TraceTable::end() {
    for (const ImplPtr& leaf : leaves_reached_)
        leaves_.push_back({leaf->name, leaf->shape(), leaf->grad ? l2_norm(*leaf->grad) : 0.0,
                           from_[leaf.get()], onto_earlier_[leaf.get()]});
    leaves_reached_.clear();
}

const TraceTable::Row* TraceTable::find(const std::string& op, const std::string& module_path) const {
    for (const Row& r : rows_)
        if (r.op == op && (module_path.empty() || r.module_path == module_path)) return &r;
    return nullptr;
}

bool TraceTable::grad_norm_of(const Node* node, double& norm) const {
    auto it = row_of_node_.find(node);
    if (it == row_of_node_.end()) return false;
    norm = rows_[it->second].grad_norm;
    return true;
}

std::string TraceTable::str() const {
    std::size_t op_w = 2, mod_w = 6, shape_w = 7;
    for (const Row& r : rows_) {
        op_w = std::max(op_w, r.op.size());
        mod_w = std::max(mod_w, r.module_path.size());
        shape_w = std::max(shape_w, shape_str(r.grad_shape).size());
    }
    std::string s = fmt::format("{:>4}  {:<{}}  {:<{}}  {:<{}}  {:<10}  {}\n", "step", "op", op_w, "module", mod_w,
                                "grad in", shape_w, "|grad|", "from");
    for (const Row& r : rows_) {
        s += fmt::format("{:>4}  {:<{}}  {:<{}}  {:<{}}  {:<10.4g}  {}\n", r.step, r.op, op_w,
                         r.module_path.empty() ? "-" : r.module_path, mod_w, shape_str(r.grad_shape), shape_w,
                         r.grad_norm, steps_str(r.from));
        for (const std::string& note : r.reductions) s += fmt::format("{:>4}  {:<{}}  {}\n", "", "", op_w, note);
    }
    if (leaves_.empty()) return s;
    std::size_t name_w = 4;
    for (const Leaf& l : leaves_) name_w = std::max(name_w, (l.name.empty() ? "(input)" : l.name).size());
    s += fmt::format("\n{:<{}}  {:<{}}  {:<10}  {}\n", "leaf", name_w, "shape", shape_w, "|grad|", "from");
    for (const Leaf& l : leaves_)
        s += fmt::format("{:<{}}  {:<{}}  {:<10.4g}  {}{}\n", l.name.empty() ? "(input)" : l.name, name_w,
                         shape_str(l.shape), shape_w, l.grad_norm, steps_str(l.from),
                         l.onto_earlier ? "  (+ gradient of an earlier backward)" : "");
    return s;
}

void TraceTable::print(std::FILE* out) const {
    const std::string s = str();
    std::fwrite(s.data(), 1, s.size(), out);
    std::fflush(out);
}

}  // namespace xtgrad
