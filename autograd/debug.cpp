#include <xtgrad/autograd/debug.hpp>

#include <xtgrad/autograd/anomaly.hpp>
#include <xtgrad/autograd/env_switch.hpp>
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/format.hpp>
#include <xtgrad/autograd/name_guess.hpp>
#include <xtgrad/autograd/node.hpp>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <unordered_set>
#include <utility>

namespace xtgrad::debug {

State state;

namespace {

struct Filter {
    std::string op, module;
    bool armed = false;  // some filter is set: before_node has work to do
    bool trap = false;
};

const char* env_or_empty(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr ? v : "";
}

// Starts from the environment, so XTGRAD_BREAK_OP=... works without touching the program.
Filter& filter() {
    static Filter f = [] {
        Filter g{env_or_empty("XTGRAD_BREAK_OP"), env_or_empty("XTGRAD_BREAK_MODULE")};
        g.armed = !g.op.empty() || !g.module.empty();
        g.trap = detail::read_switch(detail::kBreakTrapSwitch);
        return g;
    }();
    return f;
}

// True when SIGTRAP stops the program somewhere useful: a debugger (any ptrace tracer) is
// attached, or the program installed a handler. Otherwise SIGTRAP's default action kills the
// process with no message.
bool trap_is_caught() {
    struct sigaction current {};
    if (sigaction(SIGTRAP, nullptr, &current) == 0 && current.sa_handler != SIG_DFL) return true;
    std::FILE* status = std::fopen("/proc/self/status", "r");
    if (status == nullptr) return false;
    char line[256];
    long tracer = 0;
    while (std::fgets(line, sizeof line, status) != nullptr)
        if (std::sscanf(line, "TracerPid: %ld", &tracer) == 1) break;
    std::fclose(status);
    return tracer != 0;
}

bool under(const std::string& path, const std::string& prefix) {
    return path.starts_with(prefix) && (path.size() == prefix.size() || path[prefix.size()] == '.');
}

void emit(const std::string& text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
}

std::string values_str(const Array& a, std::size_t max_values) {
    std::string s = "[";
    const std::size_t n = std::min(a.size(), max_values);
    for (std::size_t i = 0; i < n; ++i) s += fmt::format("{}{:.4g}", i ? ", " : "", a.data()[i]);
    if (a.size() > n) s += fmt::format(", ... ({} values)", a.size());
    return s + "]";
}

void tree(std::string& out, const TensorImpl& t, const std::string& indent, int depth,
          std::unordered_set<const TensorImpl*>& seen);

// The inputs of node, one per line, below `indent`.
void subtree(std::string& out, const Node& node, const std::string& indent, int depth,
             std::unordered_set<const TensorImpl*>& seen) {
    const auto& in = node.inputs();
    if (depth <= 0) {
        if (!in.empty()) out += indent + "`- ...\n";
        return;
    }
    for (std::size_t i = 0; i < in.size(); ++i) {
        const bool last = i + 1 == in.size();
        out += indent + (last ? "`- " : "|- ");
        if (in[i] == nullptr)
            out += "(none)\n";
        else
            tree(out, *in[i], indent + (last ? "   " : "|  "), depth - 1, seen);
    }
}

std::string node_line(const Node& node) {
    return node.op() + (node.module_path().empty() ? "" : "  in " + node.module_path());
}

// One line for t, then its node's inputs; a tensor reached twice is expanded once.
void tree(std::string& out, const TensorImpl& t, const std::string& indent, int depth,
          std::unordered_set<const TensorImpl*>& seen) {
    const Node* node = t.grad_fn.get();
    if (node == nullptr) {
        out += (t.name.empty() ? "leaf" : t.name) + " " + shape_str(t.shape()) +
               (t.requires_grad ? "" : " (no grad)") + "\n";
        return;
    }
    out += node->op() + " -> " + shape_str(t.shape());
    if (!node->module_path().empty()) out += "  in " + node->module_path();
    if (!seen.insert(&t).second) {
        out += "  (shown above)\n";
        return;
    }
    if (node->released()) {
        out += "  (freed by backward)\n";
        return;
    }
    out += "\n";
    subtree(out, *node, indent, depth, seen);
}

}  // namespace

// ---- text ----

// The gradient the debugger shows: .grad, or during a backward pass the gradient summed so far
// into a tensor that has not had its turn yet (TensorImpl::incoming).
static const Array* shown_grad(const TensorImpl& t) {
    if (t.grad) return t.grad.get();
    return t.incoming.get();
}

std::string describe(const TensorImpl& t, std::size_t max_values) {
    const std::string who = t.name.empty() ? "tensor" : fmt::format("\"{}\"", t.name);
    // A non-leaf's values are freed once no Tensor and no backward closure holds them.
    const std::shared_ptr<const TensorValues> values = t.lock_values();
    return fmt::format("{} {} float32{} {} grad={} {}", who, shape_str(t.shape()),
                       t.requires_grad ? " requires_grad" : "", t.grad_fn ? "grad_fn=" + t.grad_fn->op() : "leaf",
                       shown_grad(t) ? shape_str(shown_grad(t)->shape()) : "none",
                       values ? values_str(values->array, max_values) : std::string("(values freed)"));
}

std::string describe(const Node& node) {
    std::string s = node.op();
    s += node.module_path().empty() ? " (outside any module)" : " in " + node.module_path();
    s += ", created at " + detail::describe_location(node.where());
    if (node.released()) return s + "\n  (released: its inputs were freed by backward)";
    for (std::size_t i = 0; i < node.inputs().size(); ++i) {
        const ImplPtr& in = node.inputs()[i];
        s += fmt::format("\n  input {}: {}", i, in ? describe(*in) : "(none)");
    }
    return s;
}

std::string graph_string(const TensorImpl& t, int depth) {
    std::string out;
    std::unordered_set<const TensorImpl*> seen;
    tree(out, t, "", std::min(depth, kMaxGraphDepth), seen);
    return out;
}

// ---- printing ----

namespace {
// On the autograd part: the C aliases below get raw pointers from gdb.
void print_impl(const TensorImpl& t) {
    const std::shared_ptr<const TensorValues> values = t.lock_values();
    emit(describe(t) + "\ntensor(" + (values ? to_string(values->array) : std::string("values freed")) + ")");
}

void print_grad_impl(const TensorImpl& t) {
    const std::string who = t.name.empty() ? fmt::format("tensor {}", shape_str(t.shape())) : t.name;
    if (!shown_grad(t)) return emit(who + " has no gradient");
    emit("grad of " + who + "\ntensor(" + to_string(*shown_grad(t)) + ")");
}

void print_graph_impl(const TensorImpl& t, int depth) {
    std::string s = graph_string(t, depth);
    if (!s.empty() && s.back() == '\n') s.pop_back();
    emit(s);
}
}  // namespace

void print(const Tensor& t) {
    if (!t.defined()) return emit("tensor(undefined)");
    print_impl(*t.impl());
}

void print_grad(const Tensor& t) {
    if (!t.defined()) return emit("tensor(undefined)");
    print_grad_impl(*t.impl());
}

void print_node(const Node* node) { emit(node ? describe(*node) : "(null node)"); }

void print_graph(const Tensor& t, int depth) {
    if (!t.defined()) return emit("tensor(undefined)");
    print_graph_impl(*t.impl(), depth);
}

void print_graph(const Node* node, int depth) {
    if (node == nullptr) return emit("(null node)");
    std::string s = node_line(*node) + "\n";
    std::unordered_set<const TensorImpl*> seen;
    if (node->released())
        s += "(freed by backward)";
    else
        subtree(s, *node, "", std::min(depth, kMaxGraphDepth), seen);
    if (!s.empty() && s.back() == '\n') s.pop_back();
    emit(s);
}

// ---- breaking ----

namespace {
// What the outermost backward pass on this thread ran, while a filter is set (pass_ended's note).
struct PassRecord {
    bool recording = false;  // from pass_began to pass_ended (a pass that threw never ends)
    std::size_t matches_at_begin = 0, nodes = 0;
    std::set<std::string> ops, modules;
};
thread_local PassRecord pass_record;
std::mutex note_mutex;  // last_note and the filters told: backward may run on several threads
std::string last_note;

std::string unmatched_note(const Filter& f, const PassRecord& r) {
    // the filter is the environment's value, shown as every such value is (escape codes as \xHH)
    const std::string op = detail::shown_env_value(f.op), module = detail::shown_env_value(f.module);
    const std::string what = f.module.empty() ? fmt::format("op '{}'", op)
                             : f.op.empty()   ? fmt::format("module '{}'", module)
                                              : fmt::format("op '{}' in module '{}'", op, module);
    std::string s = fmt::format("xtgrad: break filter {} matched none of the {} nodes of this backward pass.", what,
                                r.nodes);
    const bool op_ran = f.op.empty() || r.ops.count(f.op) != 0;
    const bool module_ran = f.module.empty() || std::any_of(r.modules.begin(), r.modules.end(),
                                                            [&](const std::string& m) { return under(m, f.module); });
    // A filter names a module or any of its ancestors: the paths the pass ran and their ancestors
    // as deep as the filter's path (encoder.layers.0 -> encoder, encoder.layers, encoder.layers.0)
    const auto depth = [](const std::string& path) { return std::count(path.begin(), path.end(), '.') + 1; };
    std::set<std::string> paths;
    for (const std::string& m : r.modules)
        for (std::size_t end = m.find('.');; end = m.find('.', end + 1)) {
            const std::string prefix = m.substr(0, end);  // end = npos: the whole path
            if (depth(prefix) <= depth(f.module)) paths.insert(prefix);
            if (end == std::string::npos) break;
        }
    if (!op_ran) s += detail::guessed_op(f.op, r.ops);
    if (!module_ran) s += detail::guessed_module(f.module, paths, r.modules);
    if (op_ran && module_ran) s += fmt::format(" Op '{}' ran, but not under module '{}'.", f.op, f.module);
    s += " Its ops: " + detail::listed(r.ops, 40) + ".";
    if (!f.module.empty()) s += " Its modules: " + detail::listed(paths, 16) + ".";
    return s;
}
}  // namespace

std::string unmatched_filter_note() {
    const std::lock_guard<std::mutex> lock(note_mutex);
    return last_note;
}

void pass_began() {
    pass_record.recording = true;
    pass_record.matches_at_begin = state.matches;
    pass_record.nodes = 0;
    pass_record.ops.clear();
    pass_record.modules.clear();
    const std::lock_guard<std::mutex> lock(note_mutex);
    last_note.clear();
}

void pass_ended() {
    if (!std::exchange(pass_record.recording, false)) return;
    const Filter& f = filter();
    if (!f.armed || pass_record.nodes == 0 || state.matches != pass_record.matches_at_begin) return;
    std::string note = unmatched_note(f, pass_record);
    const std::lock_guard<std::mutex> lock(note_mutex);
    static std::set<std::pair<std::string, std::string>> told;  // once per filter, not per step
    if (told.insert({f.op, f.module}).second) std::fprintf(stderr, "%s\n", note.c_str());
    last_note = std::move(note);
}

void check_break_environment() { (void)filter(); }

bool matches(const Node& node) {
    const Filter& f = filter();
    return (f.op.empty() || node.op() == f.op) && (f.module.empty() || under(node.module_path(), f.module));
}

void before_node(const Node& node, const Array& grad_out) {
    state.node = &node;
    state.grad_out = &grad_out;
    if (!filter().armed) {
        if (filter().trap) {  // a trap with nothing to match stops nowhere: say so once
            static bool told = false;
            if (!std::exchange(told, true))
                std::fprintf(stderr, "xtgrad: XTGRAD_BREAK_TRAP is set but no break filter is (XTGRAD_BREAK_OP, "
                                     "XTGRAD_BREAK_MODULE, debug::break_on_op or break_on_module): nothing stops\n");
        }
        return;
    }
    if (pass_record.recording) {
        ++pass_record.nodes;
        pass_record.ops.insert(node.op());
        if (!node.module_path().empty()) pass_record.modules.insert(node.module_path());
    }
    if (!matches(node)) return;
    ++state.matches;
    if (filter().trap) {
        if (trap_is_caught()) {
            std::raise(SIGTRAP);
        } else {
            static bool told = false;
            if (!std::exchange(told, true))
                std::fprintf(stderr, "xtgrad: XTGRAD_BREAK_TRAP is set but no debugger is attached; not raising SIGTRAP "
                                     "(it would kill the program). Run it under gdb to stop at %s\n", node.op().c_str());
        }
    }
    matched_node(node, grad_out);
    asm volatile("" ::: "memory");  // not a tail call: keep this frame in gdb's backtrace
}

void after_node(const Node& node) {
    state.grad_out = nullptr;
    if (filter().armed && matches(node)) matched_node_done(node);
    asm volatile("" ::: "memory");
}

// Empty on purpose: places to break. The asm keeps each a distinct, non-foldable function.
void matched_node(const Node& node, const Array& grad_out) { asm volatile("" : : "r"(&node), "r"(&grad_out) : "memory"); }
void matched_node_done(const Node& node) { asm volatile("" : : "r"(&node) : "memory"); }

bool stops_at(const Node& node) { return filter().armed && matches(node); }

void break_on_op(const char* op) {
    filter().op = op ? op : "";
    filter().armed = !filter().op.empty() || !filter().module.empty();
}

void break_on_module(const char* path) {
    filter().module = path ? path : "";
    filter().armed = !filter().op.empty() || !filter().module.empty();
}

void clear_breaks() {
    break_on_op(nullptr);
    break_on_module(nullptr);
}

void set_trap_on_match(bool on) { filter().trap = on; }

// ---- stepping ----

BackwardStepper::BackwardStepper(const Tensor& loss, bool retain_graph)
    : BackwardStepper(loss, detail::loss_seed(loss, "BackwardStepper"), retain_graph) {}

BackwardStepper::BackwardStepper(const Tensor& root, const Array& grad_output, bool retain_graph)
    : pass_(root.defined() ? root.graph_ptr() : throw Error("BackwardStepper: the tensor is undefined"), grad_output,
            retain_graph),
      next_(pass_.next()) {}

const std::shared_ptr<TensorImpl>& BackwardStepper::current() const {
    if (next_ == nullptr) fail("BackwardStepper: the backward is done ({} nodes ran)", pass_.steps_run());
    return *next_;
}

const Node& BackwardStepper::node() const { return *current()->grad_fn; }
const std::string& BackwardStepper::op() const { return node().op(); }
const std::string& BackwardStepper::module_path() const { return node().module_path(); }
const Array& BackwardStepper::grad_out() const { return *current()->incoming; }
Tensor BackwardStepper::output() const { return Tensor(current()); }

void BackwardStepper::step() {
    current();
    pass_.run_next();
    next_ = pass_.next();
}

void BackwardStepper::run_to_end() {
    while (!done()) step();
}

}  // namespace xtgrad::debug

// ---- C aliases ----

using namespace xtgrad;

void xtgrad_print(const TensorImpl* t) {
    if (t == nullptr) return debug::print(Tensor());
    debug::print_impl(*t);
}
void xtgrad_print_grad(const TensorImpl* t) {
    if (t == nullptr) return debug::print_grad(Tensor());
    debug::print_grad_impl(*t);
}
void xtgrad_print_array(const Array* a) {
    if (a == nullptr) return (void)std::puts("(null array)");
    std::printf("%s\ntensor(%s)\n", shape_str(a->shape()).c_str(), to_string(*a).c_str());
    std::fflush(stdout);
}
void xtgrad_print_node(const Node* node) { debug::print_node(node); }
void xtgrad_print_graph(const TensorImpl* t, int depth) {
    if (t == nullptr) return debug::print_graph(Tensor(), depth);
    debug::print_graph_impl(*t, depth);
}
void xtgrad_break_on_op(const char* op) { debug::break_on_op(op); }
void xtgrad_break_on_module(const char* path) { debug::break_on_module(path); }
