// Exercise 00b's grader, in four steps, each waiting for the one before and stopping at the first
// mismatch: (1) each op's value, parents and closure, called alone; (2) your order on four graphs;
// (3) your backward on shared-use, diamond, neuron and stacked graphs at 20 seeded random points
// each, against xtgrad's autograd and finite differences of your forward; (4) a chain 200000
// values deep, run in a child process so that a stack overflow is reported, not a crash.
#include "exercise.hpp"
#include "diagnose.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <map>
#include <set>

using namespace xtgrad;
using ex00b::V;
using ex00b::Value;

TEST_SUITE_BEGIN("00b_scalar_engine");

namespace {

// Inputs drawn from N(0, 1), reproducible from the seed the messages print.
std::vector<double> draw(std::uint64_t seed, std::size_t n) {
    Generator gen(seed);
    std::vector<double> x(n);
    for (double& v : x) v = gen.normal(0.f, 1.f);
    return x;
}

// ---- (1) each op alone: its closure called directly, on a grad that already holds another use's share
struct OpCase {
    const char* call;  // as the messages write it
    const char* op;    // the name it must carry
    bool same_input;   // mul(a, a)
    bool unary;
};
const OpCase op_cases[] = {{"add(a, b)", "+", false, false}, {"mul(a, b)", "*", false, false},
                           {"mul(a, a)", "*", true, false},  {"tanh(a)", "tanh", false, true},
                           {"exp(a)", "exp", false, true}};

std::string check_op(const OpCase& c, std::uint64_t seed) {
    const std::vector<double> x = draw(seed, 3);
    const double av = x[0], bv = c.same_input ? x[0] : x[1], g = x[2], prior = 0.5;  // prior: another use's share
    const V a = ex00b::leaf(av), b = c.same_input ? a : ex00b::leaf(bv);
    const std::string op = c.op;
    const V out = op == "+" ? ex00b::add(a, b) : op == "*" ? ex00b::mul(a, b) : op == "tanh" ? ex00b::tanh(a) : ex00b::exp(a);
    const std::string where = fmt::format("{} at a = {:.4g}{} (seed {})", c.call, av,
                                          c.unary || c.same_input ? "" : fmt::format(", b = {:.4g}", bv), seed);
    if (!out) return where + ": returned a null V";
    const double t = std::tanh(av), e = std::exp(av);
    const double value = op == "+" ? av + bv : op == "*" ? av * bv : op == "tanh" ? t : e;
    if (std::string m = grading::diagnose_scalar(where + ": its data", out->data, value, 1e-12 * (1 + std::abs(value)));
        !m.empty())
        return m;
    if (out->op != c.op) return fmt::format("{}: its op is \"{}\": name it \"{}\"", where, out->op, c.op);
    const std::vector<V> parents = c.unary ? std::vector<V>{a} : std::vector<V>{a, b};
    if (out->parents != parents)
        return fmt::format("{}: its parents are {} value(s), not the {} it was computed from, in order ({})", where,
                           out->parents.size(), parents.size(), c.unary ? "a" : c.same_input ? "a, a: a twice" : "a, b");
    if (!out->backward_fn) return where + ": its backward_fn is empty: is the TODO still there?";
    a->grad = b->grad = prior;
    out->grad = g;
    try {
        out->backward_fn();
    } catch (const std::exception& ex) {
        return fmt::format("{}: backward_fn threw: {}", where, ex.what());
    }
    // d out / d a (and / d b): the local derivatives
    const double la = op == "+" ? 1 : op == "*" ? (c.same_input ? 2 * av : bv) : op == "tanh" ? 1 - t * t : e;
    const double lb = op == "+" ? 1 : av;
    std::vector<grading::ScalarHypothesis> likely = {
        {"it is unchanged: is the TODO of the closure still there?", prior},
        {"the share of another use that a's grad already held is gone: accumulate with +=, not =", la * g},
        {fmt::format("the gradient that reached the output (self->grad = {:.4g}) is not used: the chain rule "
                     "multiplies by it",
                     g),
         prior + la},
    };
    if (c.same_input) {
        likely.push_back({"a got one factor's share: mul(a, a) lists a twice, so it gets both (+= twice)", prior + av * g});
        likely.push_back({"a's grad holds one factor's share only: accumulate with +=, not =", av * g});
    }
    else if (op == "*") likely.push_back({"a got its own value: d(a·b)/da is the other factor", prior + av * g});
    if (op == "tanh") likely.push_back({"1 − a² is not tanh's derivative: 1 − t², t = tanh(a), the output", prior + (1 - av * av) * g});
    if (op == "exp") {
        likely.push_back({"exp's derivative is exp(a), its output, not a", prior + av * g});
        likely.push_back({"that is exp(out): out's data is exp(a) already, and the derivative is out itself", prior + std::exp(e) * g});
    }
    if (std::string m = grading::diagnose_scalar(where + ": a's grad after backward_fn", a->grad, prior + la * g,
                                                 1e-9, likely);
        !m.empty())
        return m;
    if (!c.unary && !c.same_input)
        return grading::diagnose_scalar(where + ": b's grad after backward_fn", b->grad, prior + lb * g, 1e-9,
                                        {{"it is unchanged: does the closure send b its share?", prior},
                                         {"the share b's grad already held is gone: accumulate with +=, not =", lb * g},
                                         {"b got its own value: d(a·b)/db is the other factor", prior + bv * g}});
    return "";
}

std::string ops_all() {
    for (const OpCase& c : op_cases)
        for (std::uint64_t seed = 1; seed <= 10; ++seed)
            if (std::string m = check_op(c, seed); !m.empty()) return m;
    return "";
}

// ---- the graphs, written once for any value type with add, mul, tanh and exp
struct Graph {
    const char* name;
    const char* about;
    std::vector<std::string> leaves;
};
const std::vector<Graph> graphs = {
    {"shared", "L = a·a·b + a: a used three times, twice by one *", {"a", "b"}},
    {"diamond", "h = tanh(a·b), L = h·exp(h) + h: h reaches L by three paths", {"a", "b"}},
    {"neuron", "L = tanh(x1·w1 + x2·w2 + c), micrograd's neuron", {"x1", "w1", "x2", "w2", "c"}},
    {"stacked", "h = a, then h = tanh(h) + h·w six times: each h used twice, 64 paths", {"a", "w"}},
};
template <class T>
T expression(std::size_t graph, const std::vector<T>& x) {
    if (graph == 0) return add(mul(mul(x[0], x[0]), x[1]), x[0]);
    if (graph == 1) {
        const T h = tanh(mul(x[0], x[1]));
        return add(mul(h, exp(h)), h);
    }
    if (graph == 2) return tanh(add(add(mul(x[0], x[1]), mul(x[2], x[3])), x[4]));
    T h = x[0];
    for (int i = 0; i < 6; ++i) h = add(tanh(h), mul(h, x[1]));
    return h;
}
std::string where(std::size_t gi, std::uint64_t seed) {
    return fmt::format("graph '{}' ({}), seed {}", graphs[gi].name, graphs[gi].about, seed);
}

// Your graph at the seed's point (plus an optional nudge of one input), with its leaves.
struct Built {
    V root;
    std::vector<V> leaves;
};
Built build(std::size_t gi, std::uint64_t seed, std::size_t nudged = 0, double by = 0) {
    std::vector<double> x = draw(seed, graphs[gi].leaves.size());
    x[nudged] += by;
    Built b;
    for (double v : x) b.leaves.push_back(ex00b::leaf(v));
    b.root = expression(gi, b.leaves);
    return b;
}

// ---- a reference in double, to name the cause: the graph as a tape in creation order
struct Tape {
    struct Node {
        std::string op;
        std::vector<std::size_t> parents;
        double data;
    };
    std::vector<Node> nodes;
};
struct R {
    Tape* tape;
    std::size_t i;
};
R push(const R& a, std::string op, std::vector<std::size_t> parents, double data) {
    a.tape->nodes.push_back({std::move(op), std::move(parents), data});
    return {a.tape, a.tape->nodes.size() - 1};
}
double val(const R& a) { return a.tape->nodes[a.i].data; }
R add(const R& a, const R& b) { return push(a, "+", {a.i, b.i}, val(a) + val(b)); }
R mul(const R& a, const R& b) { return push(a, "*", {a.i, b.i}, val(a) * val(b)); }
R tanh(const R& a) { return push(a, "tanh", {a.i}, std::tanh(val(a))); }
R exp(const R& a) { return push(a, "exp", {a.i}, std::exp(val(a))); }

// The grads the tape's nodes get when their closures run in `schedule` (indices, repeats allowed).
std::vector<double> simulate(const Tape& t, const std::vector<std::size_t>& schedule) {
    std::vector<double> grad(t.nodes.size(), 0.0);
    grad.back() = 1;
    for (std::size_t n : schedule) {
        const Tape::Node& node = t.nodes[n];
        for (std::size_t s = 0; s < node.parents.size(); ++s) {
            const double other = node.parents.size() == 2 ? t.nodes[node.parents[1 - s]].data : 0;
            const double local = node.op == "+" ? 1 : node.op == "*" ? other : node.op == "tanh" ? 1 - node.data * node.data : node.data;
            grad[node.parents[s]] += local * grad[n];
        }
    }
    return grad;
}
// Run-when-reached: a node's closure runs as soon as one consumer has sent it something, then its
// parents' (recursion from the root, as a first try often does), with or without a visited set.
void reached(const Tape& t, std::size_t n, bool once, std::vector<bool>& done, std::vector<std::size_t>& out) {
    if (once && done[n]) return;
    done[n] = true;
    out.push_back(n);
    for (std::size_t p : t.nodes[n].parents) reached(t, p, once, done, out);
}
std::vector<grading::ScalarHypothesis> hypotheses(const Tape& t, std::size_t leaf) {
    std::vector<std::size_t> forward(t.nodes.size()), naive, naive_once;
    for (std::size_t i = 0; i < forward.size(); ++i) forward[i] = i;
    std::vector<bool> done(t.nodes.size(), false);
    reached(t, t.nodes.size() - 1, false, done, naive);
    done.assign(t.nodes.size(), false);
    reached(t, t.nodes.size() - 1, true, done, naive_once);
    const char* order = "order: a node ran before all its consumers had added into its grad: run the closures in the "
                        "reverse of the topological order, and nothing else";
    return {{order, simulate(t, naive)[leaf]},
            {order, simulate(t, naive_once)[leaf]},
            {"the closures ran leaves first (the topological order itself): walk it from the end, the root first",
             simulate(t, forward)[leaf]}};
}

// ---- (2) the order
std::vector<Value*> reachable(const V& root) {
    std::vector<Value*> out{root.get()}, todo{root.get()};
    std::set<Value*> seen{root.get()};
    while (!todo.empty()) {
        Value* v = todo.back();
        todo.pop_back();
        for (const V& p : v->parents)
            if (seen.insert(p.get()).second) out.push_back(p.get()), todo.push_back(p.get());
    }
    return out;
}
std::string name_of(const Built& b, const Value* v, std::size_t gi) {
    for (std::size_t i = 0; i < b.leaves.size(); ++i)
        if (b.leaves[i].get() == v) return "leaf " + graphs[gi].leaves[i];
    return v == b.root.get() ? "L" : "an output of " + (v->op.empty() ? std::string("a leaf") : "'" + v->op + "'");
}

std::string check_order(std::size_t gi, std::uint64_t seed) {
    const Built b = build(gi, seed);
    std::vector<Value*> order;
    try {
        order = ex00b::topological_order(b.root);
    } catch (const std::exception& e) {
        return fmt::format("topological_order threw, {}: {}", where(gi, seed), e.what());
    }
    if (order.empty()) return fmt::format("topological_order returned nothing, {}: is the TODO still there?", where(gi, seed));
    const std::vector<Value*> all = reachable(b.root);
    const std::set<Value*> want(all.begin(), all.end());
    std::map<Value*, std::size_t> at;
    for (std::size_t p = 0; p < order.size(); ++p) {
        if (!want.count(order[p]))
            return fmt::format("the order holds a value not reached from L (position {}), {}", p, where(gi, seed));
        if (!at.emplace(order[p], p).second)
            return fmt::format("the order lists {} twice (positions {} and {}), {}: a value reached by two paths goes in "
                               "once (its closure would run twice): keep a set of the values seen",
                               name_of(b, order[p], gi), at[order[p]], p, where(gi, seed));
    }
    for (Value* v : all)
        if (!at.count(v)) return fmt::format("the order misses {}, {}", name_of(b, v, gi), where(gi, seed));
    for (const auto& [v, p] : at)
        for (const V& parent : v->parents)
            if (at[parent.get()] > p)
                return fmt::format("order: {} (position {}) comes before {} (position {}), which it was computed from, {}: "
                                   "walked backward, a node would run before all its consumers had added into its "
                                   "grad{}",
                                   name_of(b, v, gi), p, name_of(b, parent.get(), gi), at[parent.get()], where(gi, seed),
                                   at[b.root.get()] == 0 ? " (L is first: is the order reversed, or does a value go in when first "
                                                            "reached rather than once all its parents are in?)"
                                                          : "");
    return "";
}
std::string order_all() {
    for (std::size_t gi = 0; gi < graphs.size(); ++gi)
        for (std::uint64_t seed = 1; seed <= 5; ++seed)
            if (std::string m = check_order(gi, seed); !m.empty()) return m;
    return "";
}

const char* const shared_inside =
    "here a value that is not a leaf (h) feeds several ops: did its closure run before all of them had added into "
    "its grad? Run each closure once, in the reverse of your topological_order";

// ---- (3) backward against xtgrad's autograd and finite differences
std::string check_backward(std::size_t gi, std::uint64_t seed) {
    const Graph& graph = graphs[gi];
    std::weak_ptr<Value> root_alive;
    std::vector<double> mine;
    {
        Built b = build(gi, seed);
        root_alive = b.root;
        try {
            ex00b::backward(b.root);
        } catch (const std::exception& e) {
            return fmt::format("backward threw, {}: {}", where(gi, seed), e.what());
        }
        if (b.root->grad != 1)
            return fmt::format("after backward, L's grad is {:.4g}, {}: seed it with dL/dL = 1", b.root->grad, where(gi, seed));
        for (const V& l : b.leaves) mine.push_back(l->grad);
    }
    const std::vector<double> x = draw(seed, graph.leaves.size());
    // xtgrad's autograd on the same expression (in float)
    std::vector<Tensor> tx;
    for (double v : x) tx.push_back(Tensor::scalar(static_cast<float>(v), true));
    expression(gi, tx).backward();
    // the tape, for the likely causes
    Tape tape;
    std::vector<R> rx;
    for (double v : x) rx.push_back(push(R{&tape, 0}, "", {}, v));
    expression(gi, rx);
    for (std::size_t i = 0; i < x.size(); ++i) {
        const std::string what = fmt::format("dL/d{}, {}", graph.leaves[i], where(gi, seed));
        const double want = tx[i].grad().item();
        if (std::string m = grading::diagnose_scalar(what + ", against xtgrad's autograd", mine[i], want,
                                                     2e-4 * (1 + std::abs(want)), hypotheses(tape, i),
                                                     gi == 1 || gi == 3 ? shared_inside : "");
            !m.empty())
            return m;
        const double h = 1e-5, fd = (build(gi, seed, i, h).root->data - build(gi, seed, i, -h).root->data) / (2 * h);
        if (std::string m = grading::diagnose_scalar(what + ", against finite differences of your forward", mine[i], fd,
                                                     1e-6 * (1 + std::abs(fd)));
            !m.empty())
            return m;
    }
    if (!root_alive.expired())
        return fmt::format("{}: L is never freed: a closure holds its own result by a V, a cycle; capture Value* self = "
                           "out.get() instead",
                           where(gi, seed));
    return "";
}
std::string backward_all() {
    for (std::size_t gi = 0; gi < graphs.size(); ++gi)
        for (std::uint64_t seed = 1; seed <= 20; ++seed)
            if (std::string m = check_backward(gi, seed); !m.empty()) return m;
    return "";
}

// ---- (4) a chain 200000 values deep: x, then x + c again and again; dL/dx = 1, dL/dc = 200000
std::string deep_chain() {
    constexpr int kDepth = 200000;
    const V x = ex00b::leaf(0.25), c = ex00b::leaf(0.5);
    static V h;  // never freed: freeing the chain recurses, value by value, and the child exits first
    h = x;
    for (int i = 0; i < kDepth; ++i) h = ex00b::add(h, c);
    ex00b::backward(h);
    const std::string what = fmt::format("a chain {} values deep (h = x, then h = h + c again and again)", kDepth);
    std::string m = grading::diagnose_scalar(what + ": dL/dx", x->grad, 1.0, 1e-9);
    if (m.empty()) m = grading::diagnose_scalar(what + ": dL/dc (c used by every +)", c->grad, kDepth, 1e-6);
    return m;
}
// Runs deep_chain() in a child process: a recursion that overflows the stack kills the child only.
std::string deep_chain_in_child() {
    int fds[2];
    if (pipe(fds) != 0) return "could not make a pipe to run the deep chain";
    const pid_t pid = fork();
    if (pid == 0) {
        std::signal(SIGSEGV, SIG_DFL);  // the child dies of it (doctest's handler would report a crash)
        close(fds[0]);
        std::string m;
        try {
            m = deep_chain();
        } catch (const std::exception& e) {
            m = std::string("the deep chain threw: ") + e.what();
        }
        const ssize_t written = write(fds[1], m.data(), m.size());
        _exit(written == static_cast<ssize_t>(m.size()) ? 0 : 1);
    }
    close(fds[1]);
    std::string m;
    char buf[512];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) m.append(buf, static_cast<std::size_t>(n));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status))
        return fmt::format("a chain 200000 values deep killed the program (signal {}{}): each value recursed into is a "
                           "stack frame; walk with an explicit stack (a std::vector of values still to visit)",
                           WTERMSIG(status), WTERMSIG(status) == SIGSEGV ? ", a stack overflow" : "");
    return m;
}

const char* const wait_ops = "not graded until every op is right (above)";

}  // namespace

TEST_CASE("00b_scalar_engine: 1. each op's data, op, parents and closure, alone (5 ops, 10 seeds each)") { GRADE(ops_all()); }

TEST_CASE("00b_scalar_engine: 2. topological_order on 4 graphs, 5 seeds each") {
    GRADE(ops_all().empty() ? order_all() : wait_ops);
}

TEST_CASE("00b_scalar_engine: 3. backward against xtgrad's autograd and finite differences, 4 graphs, 20 seeds each") {
    std::string m = ops_all().empty() ? "" : wait_ops;
    if (m.empty() && !order_all().empty()) m = "not graded until the order is right (above)";
    GRADE(m.empty() ? backward_all() : m);
}

TEST_CASE("00b_scalar_engine: 4. a chain 200000 values deep") {
    const bool before = ops_all().empty() && order_all().empty() && backward_all().empty();
    GRADE(before ? deep_chain_in_child() : "not graded until the graphs are right (above)");
}

TEST_SUITE_END();
