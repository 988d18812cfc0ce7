#include <xtgrad/autograd/graphviz.hpp>

#include <xtgrad/io/atomic_file.hpp>
#include <xtgrad/autograd/engine.hpp>
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/node.hpp>
#include <xtgrad/autograd/trace_table.hpp>

#include <algorithm>
#include <cctype>
#include <deque>
#include <ostream>
#include <map>
#include <set>
#include <unordered_map>

namespace xtgrad {

namespace {

bool under(const std::string& path, const std::string& prefix) {
    return prefix.empty() ||
           (path.starts_with(prefix) && (path.size() == prefix.size() || path[prefix.size()] == '.'));
}

std::string parent_of(const std::string& path) {
    const std::size_t dot = path.rfind('.');
    return dot == std::string::npos ? "" : path.substr(0, dot);
}

std::string quoted(const std::string& s) {
    std::string q = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') q += '\\';
        q += c == '\n' ? std::string("\\n") : std::string(1, c);
    }
    return q + "\"";
}

// "name: float (2,3) min -1 max 2 mean 0.5"; ids and masks by shape (and how many are true or set).
std::string saved_summary(const Node& node, const std::string& name) {
    const std::vector<std::string> kinds = {"float", "int64", "bits", "bool"};
    for (const std::string& kind : kinds) {
        try {
            if (kind == "float") {
                const Array& a = node.saved(name.c_str());
                if (a.size() == 0) return fmt::format("{}: float {} (empty)", name, shape_str(a.shape()));
                double lo = a.data()[0], hi = lo, sum = 0;
                for (float v : a) lo = std::min<double>(lo, v), hi = std::max<double>(hi, v), sum += v;
                return fmt::format("{}: float {} min {:.4g} max {:.4g} mean {:.4g}", name, shape_str(a.shape()), lo, hi,
                                   sum / static_cast<double>(a.size()));
            }
            if (kind == "int64") return fmt::format("{}: int64 {}", name, shape_str(node.saved_ids(name.c_str()).shape()));
            if (kind == "bits") {
                const BitMask& b = node.saved_bits(name.c_str());
                return fmt::format("{}: bits {} ({} set)", name, shape_str(b.shape()), b.count());
            }
            const Mask& m = node.saved_mask(name.c_str());
            std::size_t on = 0;
            for (bool b : m) on += b;
            return fmt::format("{}: bool {} ({} true)", name, shape_str(m.shape()), on);
        } catch (const Error&) {  // another kind (or freed): try the next
        }
    }
    return name + ": not readable";
}

class DotWriter {
public:
    DotWriter(const Tensor& root, const DotOptions& o) : o_(o), root_(root.impl_ptr()) {}

    std::string run() {
        measure_depths();
        if (!root_->grad_fn) draw_outside(root_.get());
        for (const TensorImpl* t : visited_)
            if (drawn(t)) draw_node(t);
        std::string out = "digraph xtgrad {\n  rankdir=TB;\n  newrank=true;\n"
                          "  node [fontname=\"Helvetica\", fontsize=10];\n  edge [color=gray30];\n";
        if (!o_.title.empty()) out += fmt::format("  label={};\n  labelloc=t;\n", quoted(o_.title));
        emit_cluster("", "", out, "  ");
        for (const std::string& e : edges_) out += "  " + e + "\n";
        return out + "}\n";
    }

private:
    // Depth = drawn nodes between the top and a tensor (0-1 BFS: nodes outside the prefix cost 0).
    void measure_depths() {
        std::deque<const TensorImpl*> queue{root_.get()};
        depth_[root_.get()] = 0;
        while (!queue.empty()) {
            const TensorImpl* t = queue.front();
            queue.pop_front();
            if (expanded_.insert(t).second) visited_.push_back(t);
            const Node* node = t->grad_fn.get();
            if (node == nullptr) continue;
            if (node->released())
                fail("to_dot: the graph below this tensor was freed by backward(); export it before backward, "
                     "or call backward(retain_graph = true)");
            const int d = depth_[t];
            if (o_.max_depth >= 0 && d > o_.max_depth) continue;
            const int cost = in_prefix(*node) ? 1 : 0;
            for (const ImplPtr& in : node->inputs()) {
                if (!in) continue;
                auto it = depth_.find(in.get());
                if (it != depth_.end() && it->second <= d + cost) continue;
                depth_[in.get()] = d + cost;
                if (cost == 0) queue.push_front(in.get());
                else queue.push_back(in.get());
            }
        }
    }

    bool in_prefix(const Node& node) const { return under(node.module_path(), o_.module_prefix); }
    bool drawn(const TensorImpl* t) const {
        const auto it = depth_.find(t);
        return t->grad_fn && it != depth_.end() && in_prefix(*t->grad_fn) &&
               (o_.max_depth < 0 || it->second <= o_.max_depth);
    }

    std::string id_of(const TensorImpl* t) {
        auto [it, fresh] = ids_.emplace(t, "");
        if (fresh) it->second = fmt::format("t{}", ids_.size() - 1);
        return it->second;
    }

    // The gradient norm of t from its own grad or the trace; -1 if neither knows it.
    double grad_norm(const TensorImpl& t) const {
        double g = -1;
        if (t.grad) return l2_norm(*t.grad);
        if (o_.trace && t.grad_fn && o_.trace->grad_norm_of(t.grad_fn.get(), g)) return g;
        return -1;
    }

    void record(const TensorImpl* t, std::string kind, std::string op, std::string module_path) {
        if (o_.nodes == nullptr) return;
        DotNode n{.id = id_of(t), .kind = std::move(kind), .op = std::move(op), .module_path = std::move(module_path),
                  .shape = shape_str(t->shape()), .input_shapes = {}, .saved = {}, .grad_norm = grad_norm(*t)};
        if (n.kind == "op") {
            const Node& node = *t->grad_fn;
            for (const ImplPtr& in : node.inputs()) n.input_shapes.push_back(in ? shape_str(in->shape()) : "none");
            for (const std::string& name : node.saved_names()) n.saved.push_back(saved_summary(node, name));
        }
        o_.nodes->push_back(std::move(n));
    }

    std::string summaries(const TensorImpl& t) const {
        std::string s;
        if (o_.values) {
            const std::shared_ptr<const TensorValues> v = t.lock_values();
            s += v ? fmt::format("\n|v| = {:.4g}", l2_norm(v->array)) : std::string("\nvalues freed");
        }
        if (!o_.grads) return s;
        double g = 0;
        if (t.grad)
            s += fmt::format("\n|g| = {:.4g}", l2_norm(*t.grad));
        else if (o_.trace && t.grad_fn && o_.trace->grad_norm_of(t.grad_fn.get(), g))
            s += fmt::format("\n|g| = {:.4g}", g);
        return s;
    }

    void add(const std::string& cluster, std::string stmt) {
        items_[o_.clusters ? cluster : ""].push_back(std::move(stmt));
    }

    void draw_node(const TensorImpl* t) {
        const Node& node = *t->grad_fn;
        const std::string id = id_of(t);
        record(t, "op", node.op(), node.module_path());
        // a node recorded by a create_graph backward (autograd/grad.hpp) is marked with its pass:
        // orange, "backward pass k" under its op
        const unsigned depth = node.backward_depth();
        const std::string pass = depth == 0 ? "" : fmt::format("\nbackward pass {}", depth);
        add(node.module_path(), id + " [shape=box, style=\"rounded,filled\", fillcolor=" +
                                    std::string(depth == 0 ? "\"#eeeeee\"" : "\"#ffe0b2\"") +
                                    std::string(t == root_.get() ? ", penwidth=2" : "") + ", label=" +
                                    quoted(node.op() + pass + "\n" + shape_str(t->shape()) + summaries(*t)) + "];");
        for (const ImplPtr& in : node.inputs()) {
            if (!in) continue;
            if (!drawn(in.get())) draw_outside(in.get());
            edges_.push_back(id_of(in.get()) + " -> " + id + ";");
        }
    }

    // A leaf, or a stub for a tensor computed outside the drawing (another module, or too deep).
    void draw_outside(const TensorImpl* t) {
        if (!outside_.insert(t).second) return;
        const std::string id = id_of(t), shape = shape_str(t->shape());
        if (t->grad_fn == nullptr) {
            const bool param = !t->name.empty();
            record(t, param ? "parameter" : "input", "", t->name);
            add(param ? parent_of(t->name) : "",
                id + " [shape=ellipse, style=filled, fillcolor=" + (param ? "\"#cfe2ff\"" : "white") +
                    ", label=" + quoted((param ? t->name : std::string("input")) + "\n" + shape + summaries(*t)) + "];");
            return;
        }
        const Node& node = *t->grad_fn;
        record(t, "stub", node.op(), node.module_path());
        const std::string label =
            in_prefix(node) ? fmt::format("... {}\n{}", node.op(), shape)
                            : fmt::format("from {}\n{} {}", node.module_path().empty() ? "outside" : node.module_path(),
                                          node.op(), shape);
        add("", id + " [shape=box, style=dashed, fontcolor=gray40, label=" + quoted(label) + "];");
    }

    // Nested clusters; a cluster holding nothing but one child is merged into it.
    void emit_cluster(const std::string& path, const std::string& shown_parent, std::string& out,
                      const std::string& indent) {
        if (children_.empty()) index_clusters();
        const std::vector<std::string>& kids = children_[path];
        if (!path.empty() && items_[path].empty() && kids.size() == 1) return emit_cluster(kids[0], shown_parent, out, indent);
        std::string inner = indent;
        if (!path.empty()) {
            const std::string label = shown_parent.empty() ? path : path.substr(shown_parent.size() + 1);
            out += indent + "subgraph " + cluster_id(path) + " {\n" + indent + "  label=" + quoted(label) +
                   ";\n" + indent + "  style=rounded;\n" + indent + "  color=gray60;\n";
            inner += "  ";
        }
        for (const std::string& stmt : items_[path]) out += inner + stmt + "\n";
        for (const std::string& kid : kids) emit_cluster(kid, path.empty() ? shown_parent : path, out, inner);
        if (!path.empty()) out += indent + "}\n";
    }

    void index_clusters() {
        std::set<std::string> paths;
        for (const auto& [path, stmts] : items_)
            for (std::string p = path; !p.empty(); p = parent_of(p)) paths.insert(p);
        for (const std::string& p : paths) children_[parent_of(p)].push_back(p);
        children_[""];  // the top level exists even when empty
    }

    std::string cluster_id(const std::string& path) {
        std::string id = "cluster_";
        for (char c : path) id += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
        while (!cluster_ids_.insert(id).second) id += "_";
        return id;
    }

    const DotOptions& o_;
    ImplPtr root_;
    std::unordered_map<const TensorImpl*, int> depth_;
    std::vector<const TensorImpl*> visited_;  // in BFS order, so the output is deterministic
    std::set<const TensorImpl*> expanded_;
    std::unordered_map<const TensorImpl*, std::string> ids_;
    std::set<const TensorImpl*> outside_;
    std::map<std::string, std::vector<std::string>> items_;  // statements per module path
    std::map<std::string, std::vector<std::string>> children_;
    std::set<std::string> cluster_ids_;
    std::vector<std::string> edges_;
};

}  // namespace

void check_module_prefix(const Tensor& root, const std::string& prefix, const char* who) {
    if (prefix.empty() || !root.defined()) return;
    // every module path of the graph's ops (a graph of thousands of nodes has tens of modules)
    std::set<std::string> modules;
    std::set<const TensorImpl*> seen{root.impl_ptr().get()};
    std::vector<const TensorImpl*> stack{root.impl_ptr().get()};
    while (!stack.empty()) {
        const Node* node = stack.back()->grad_fn.get();
        stack.pop_back();
        if (node == nullptr) continue;
        if (under(node->module_path(), prefix)) return;
        modules.insert(node->module_path());
        for (const ImplPtr& in : node->inputs())
            if (in && seen.insert(in.get()).second) stack.push_back(in.get());
    }
    // the modules one level below where the path stops matching (the top level if nowhere)
    std::string parent = parent_of(prefix);
    std::set<std::string> here;
    for (;; parent = parent_of(parent)) {
        for (const std::string& m : modules)
            if (!m.empty() && m != parent && under(m, parent)) {
                const std::size_t end = m.find('.', parent.empty() ? 0 : parent.size() + 1);
                here.insert(m.substr(0, end));
            }
        if (!here.empty() || parent.empty()) break;
    }
    std::string listed;
    std::size_t shown = 0;
    for (const std::string& m : here) {
        if (shown++ == 12) {
            listed += ", ...";
            break;
        }
        listed += (listed.empty() ? "" : ", ") + m;
    }
    fail("{}: no op of the graph is in module '{}'; {}", who, prefix,
         here.empty() ? std::string("the graph's ops are in no module")
                      : fmt::format("the graph's modules {}are: {}",
                                    parent.empty() ? std::string() : fmt::format("under '{}' ", parent), listed));
}

std::string to_dot(const Tensor& root, const DotOptions& options) {
    if (!root.defined()) fail("to_dot: the tensor is undefined");
    check_module_prefix(root, options.module_prefix, "to_dot (module_prefix)");
    return DotWriter(root, options).run();
}

void write_dot(const std::string& path, const Tensor& root, const DotOptions& options) {
    const std::string dot = to_dot(root, options);
    write_file_atomically(path, [&](std::ostream& out) { out << dot; });
}

}  // namespace xtgrad
