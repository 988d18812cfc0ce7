// Exercise 11's grader: your order, then your engine plugged in with set_backward_engine on small
// graphs (a chain, shared use, a diamond, three uses, constants, a leaf root; 3 seeded shapes
// each; the order also on a chain 300 002 nodes deep) against xtgrad's engine bit for bit, then tutorial C's Transformer trained with it. Each
// test stops at the first wrong graph and names the likely cause; each waits for the one before.
#include "exercise.hpp"
#include "diagnose.hpp"

#include <xtgrad/autograd/engine.hpp>
#include <xtgrad/nn/tutorial_c/tutorial_c.hpp>
#include <xtgrad/optim/optimizer.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace xtgrad;

TEST_SUITE_BEGIN("11_engine");

namespace {

struct Graph {
    Tensor root;
    std::vector<std::pair<std::string, Tensor>> leaves;  // the leaves whose .grad is graded, by name
};
struct Builder {
    const char* name;
    const char* about;  // what the graph tests, for the messages
    std::function<Graph(std::uint64_t)> build;
};

Tensor leaf(const Shape& s, Generator& gen) { return randn(s, gen).requires_grad_(true); }

// Shapes change with the seed: n rows of d inputs, k outputs; never square.
struct Sizes {
    std::size_t n, d, k;
};
Sizes sizes(std::uint64_t seed) { return std::vector<Sizes>{{3, 4, 5}, {2, 6, 3}, {5, 2, 7}}[seed % 3]; }

const std::vector<Builder>& graphs() {
    static const std::vector<Builder> g = {
        {"chain", "sum(tanh(linear(x, w, b))): one path", [](std::uint64_t seed) {
             Generator gen(seed);
             const auto [n, d, k] = sizes(seed);
             Tensor x = leaf({n, d}, gen), w = leaf({k, d}, gen), b = leaf({k}, gen);
             return Graph{sum(tanh(linear(x, w, b))), {{"x", x}, {"w", w}, {"b", b}}};
         }},
        {"shared", "sum(linear(x, w) * sum(w)): w feeds two ops, so its gradient is the sum of two", [](std::uint64_t seed) {
             Generator gen(seed);
             const auto [n, d, k] = sizes(seed);
             Tensor x = leaf({n, d}, gen), w = leaf({k, d}, gen);
             return Graph{sum(mul(linear(x, w), sum(w))), {{"x", x}, {"w", w}}};
         }},
        {"diamond", "h = tanh(linear(x, w)), then sum(exp(h) + h * h): h reaches the loss by three edges, "
                    "two of them from the same mul",
         [](std::uint64_t seed) {
             Generator gen(seed);
             const auto [n, d, k] = sizes(seed);
             Tensor x = leaf({n, d}, gen), w = leaf({k, d}, gen);
             const Tensor h = tanh(linear(x, w));
             return Graph{sum(add(exp(h), mul(h, h))), {{"x", x}, {"w", w}}};
         }},
        {"three uses", "sum(x * u + tanh(x) + exp(x * 0.5)): x feeds three ops, summed in an order", [](std::uint64_t seed) {
             Generator gen(seed);
             const auto [n, d, k] = sizes(seed);
             (void)k;
             Tensor x = leaf({n, d}, gen), u = leaf({n, d}, gen);
             return Graph{sum(add(add(mul(x, u), tanh(x)), exp(mul(x, 0.5f)))), {{"x", x}, {"u", u}}};
         }},
        {"constants", "sum(linear(c, w) * m): c and m require no gradient and must get none", [](std::uint64_t seed) {
             Generator gen(seed);
             const auto [n, d, k] = sizes(seed);
             const Tensor c = randn({n, d}, gen), m = randn({n, k}, gen);
             Tensor w = leaf({k, d}, gen);
             return Graph{sum(mul(linear(c, w), m)), {{"w", w}}};
         }},
        {"leaf root", "backward() on a leaf itself: its .grad is the seed", [](std::uint64_t seed) {
             Generator gen(seed);
             Tensor w = leaf({sizes(seed).k}, gen);
             return Graph{w, {{"w", w}}};
         }},
    };
    return g;
}

std::string where(std::size_t gi, std::uint64_t seed) {
    return fmt::format("graph '{}' ({}), seed {}", graphs()[gi].name, graphs()[gi].about, seed);
}

// Names for the tensors of a graph: the graded leaves by name, the rest by the node that made them.
std::map<const TensorImpl*, std::string> labels(const Graph& g) {
    std::map<const TensorImpl*, std::string> out;
    for (const auto& [name, t] : g.leaves) out[t.impl()] = name;
    std::vector<ImplPtr> todo{g.root.impl_ptr()};
    while (!todo.empty()) {
        const ImplPtr t = todo.back();
        todo.pop_back();
        if (!out.count(t.get())) out[t.get()] = t->grad_fn ? "the output of " + t->grad_fn->op() : "a leaf";
        if (t->grad_fn)
            for (const ImplPtr& in : t->grad_fn->inputs())
                if (in && !out.count(in.get())) todo.push_back(in);
    }
    return out;
}

// The tensors that require grad, reached from root: what the order must hold.
std::vector<ImplPtr> xtgrad_order(const Tensor& root) {  // xtgrad's own walk (autograd/engine.hpp)
    return detail::post_order({root.impl_ptr()}, [](const TensorImpl&) { return true; });
}
std::set<const TensorImpl*> reachable(const Graph& g) {
    std::set<const TensorImpl*> seen;
    for (const ImplPtr& t : xtgrad_order(g.root)) seen.insert(t.get());
    return seen;
}

// Your order of graph g (`place` says which, for the messages) against the rules.
std::string check_order(const Graph& g, const std::string& place) {
    grading::set_context(place);
    std::vector<ImplPtr> order;
    try {
        order = ex11::topological_order(g.root);
    } catch (const std::exception& e) {
        return fmt::format("topological_order threw, {}: {}", place, e.what());
    }
    if (order.empty()) return fmt::format("topological_order returned nothing, {}: is the TODO still there?", place);
    const std::map<const TensorImpl*, std::string> name = labels(g);
    const std::set<const TensorImpl*> want = reachable(g);
    std::map<const TensorImpl*, std::size_t> at;
    for (std::size_t p = 0; p < order.size(); ++p) {
        const TensorImpl* t = order[p].get();
        if (!t) return fmt::format("the order holds a null pointer at position {}, {}", p, place);
        if (!want.count(t))
            return fmt::format("the order holds {}, which {}, {}", name.count(t) ? name.at(t) : "a tensor of another graph",
                               t->requires_grad ? "is not reached from the root" : "requires no gradient: skip such inputs",
                               place);
        if (!at.emplace(t, p).second)
            return fmt::format("the order holds {} twice (positions {} and {}), {}: a tensor reached by two paths is "
                               "listed once: keep a set of the tensors seen",
                               name.at(t), at[t], p, place);
    }
    for (const TensorImpl* t : want)
        if (!at.count(t)) return fmt::format("the order misses {}, {}", name.at(t), place);
    for (const auto& [t, p] : at)
        if (t->grad_fn)
            for (const ImplPtr& in : t->grad_fn->inputs())
                if (in && at.count(in.get()) && at[in.get()] > p)
                    return fmt::format("the order puts {} (position {}) after {} (position {}), which was computed from "
                                       "it, {}: inputs come first{}",
                                       name.at(in.get()), at[in.get()], name.at(t), p, place,
                                       at[g.root.impl()] == 0 ? " (the root is first: is it reversed?)" : "");
    return "";
}

std::string check_order(std::size_t gi, std::uint64_t seed) { return check_order(graphs()[gi].build(seed), where(gi, seed)); }

// A chain deeper than a recursive walk can go: the stack (8 MiB) holds some 100 000 frames of the
// smallest recursive depth-first search, fewer of most; lesson 11 asks for a stack of your own.
constexpr int kDeepChain = 300000;  // the messages say it
std::string check_deep_order() {
    Generator gen(11);
    Tensor x = leaf({2}, gen);
    Tensor h = x;
    for (int i = 0; i < kDeepChain; ++i) h = mul(h, 1.0001f);
    return check_order(Graph{sum(h), {{"x", x}}},
                       "a chain 300 002 nodes deep (x · 1.0001, 300 000 times, then sum): a recursive walk "
                       "overflows the stack here");
}

std::string order_all_once() {
    for (std::size_t gi = 0; gi < graphs().size(); ++gi)
        for (std::uint64_t seed : {1, 2, 3})
            if (std::string m = check_order(gi, seed); !m.empty()) return m;
    return check_deep_order();
}
// Each test case asks: the order is checked once per run (the deep chain takes a second to build).
std::string order_all() {
    static const std::string verdict = order_all_once();
    return verdict;
}

struct EngineScope {
    explicit EngineScope(BackwardEngine e) { set_backward_engine(std::move(e)); }
    ~EngineScope() { set_backward_engine(nullptr); }
    EngineScope(const EngineScope&) = delete;
    EngineScope& operator=(const EngineScope&) = delete;
};

// Counts the passes of xtgrad's own engine (its observers are told each one's begin).
struct LibraryPasses : detail::BackwardObserver {
    int begun = 0;
    void begin() override { ++begun; }
};

std::vector<std::shared_ptr<Node>> nodes_of(const Tensor& root) {
    std::vector<std::shared_ptr<Node>> out;
    std::set<const Node*> seen;
    std::vector<ImplPtr> todo{root.impl_ptr()};
    while (!todo.empty()) {
        const ImplPtr t = todo.back();
        todo.pop_back();
        if (!t->grad_fn || !seen.insert(t->grad_fn.get()).second) continue;
        out.push_back(t->grad_fn);
        for (const ImplPtr& in : t->grad_fn->inputs())
            if (in) todo.push_back(in);
    }
    return out;
}

Array seed_of(const Tensor& root, std::uint64_t seed) {
    Generator gen(seed + 50);
    return randn(root.shape(), gen).data();  // not ones: a pass that ignores the seed is caught
}

// A pass that keeps only the last consumer's gradient of each tensor (= where += belongs): the
// commonest wrong engine, run to recognise it.
void overwriting_pass(const Tensor& root, const Array& grad_output, bool retain_graph) {
    const std::vector<ImplPtr> order = xtgrad_order(root);
    std::map<const TensorImpl*, Array> total{{root.impl(), grad_output}};
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        TensorImpl& t = **it;
        if (!total.count(&t)) continue;
        const Array g = total.at(&t);
        if (!t.grad_fn) {
            t.grad = t.grad ? std::make_shared<Array>(*t.grad + g) : std::make_shared<Array>(g);
            continue;
        }
        std::vector<std::shared_ptr<Array>> sink;
        t.grad_fn->run_into(g, sink);
        for (std::size_t i = 0; i < sink.size(); ++i)
            if (sink[i]) total[t.grad_fn->inputs()[i].get()] = *sink[i];
        if (!retain_graph) t.grad_fn->release();
    }
}

// One leaf's .grad against xtgrad's, bit for bit; "" when equal.
std::string compare_leaf(const std::string& what, const Tensor& mine, const Tensor& ref, const std::string& at) {
    if (!mine.has_grad())
        return fmt::format("{}.grad was not set, {}: the walk never handed the leaf its total (does the loop over the "
                           "order reach every position, the first one too?), or the leaf's branch does not add the "
                           "total into .grad",
                           what, at);
    const Array& a = mine.grad_array();
    const Array& b = ref.grad_array();
    if (a.shape() != b.shape())
        return fmt::format("{}.grad has shape {} where {} was expected, {}", what, shape_str(shape_of(a)), shape_str(shape_of(b)), at);
    bool same = true;
    for (std::size_t i = 0; i < a.size(); ++i) same = same && a.data()[i] == b.data()[i];
    if (same) return "";
    if (grading::diagnose("", a, b, 1e-5 * (1 + static_cast<double>(xt::amax(xt::abs(b))()))).empty())
        return fmt::format("{}.grad is right to float rounding but not bit for bit, {}: your walk sums a tensor's "
                           "contributions in another order than xtgrad's (float addition is not associative). Any "
                           "topological order is right; for xtgrad's bits, walk as it does (lesson 11)",
                           what, at);
    return grading::diagnose(what + ".grad, " + at, a, b, 0);
}

// Your engine against xtgrad's on graph gi: one pass (released after), or two retained passes.
std::string check_pass(std::size_t gi, std::uint64_t seed, bool twice) {
    const Graph mine = graphs()[gi].build(seed), ref = graphs()[gi].build(seed);
    const Array s = seed_of(mine.root, seed);
    const std::string at = where(gi, seed) + (twice ? ", two passes with retain_graph" : "");
    const std::vector<std::shared_ptr<Node>> nodes = nodes_of(mine.root);
    grading::set_context(at);
    LibraryPasses library;
    try {
        const detail::ObserverScope watch(&library);
        const EngineScope scope(ex11::run_backward);
        for (int pass = 0; pass < (twice ? 2 : 1); ++pass) mine.root.backward(s, twice);
    } catch (const std::exception& e) {
        return fmt::format("your run_backward threw, {}: {}", at, e.what());
    }
    if (library.begun > 0)
        return "your run_backward ran xtgrad's engine (run_library_backward, or backward() inside it): the exercise is "
               "to write the pass";
    for (int pass = 0; pass < (twice ? 2 : 1); ++pass) run_library_backward(ref.root.impl_ptr(), s, twice);
    bool any = false;
    for (const auto& [name, t] : mine.leaves) any = any || t.has_grad();
    if (!any && mine.root.grad_fn())
        return fmt::format("no leaf got a gradient, {}: did the pass start from the root? The order lists inputs first; "
                           "the pass walks it from the end, so that every consumer runs before what it consumes",
                           at);
    // every leaf's gradient 0 where xtgrad's is not: the pass ran, from a zero (or an empty Array(), a 0-d zero) seed
    const std::function<bool(const Tensor&)> zero = [](const Tensor& t) {
        if (!t.has_grad()) return false;
        const Array& g = t.grad_array();
        return std::all_of(g.begin(), g.end(), [](float v) { return v == 0.f; });
    };
    bool all_zero = true, ref_zero = true;
    for (std::size_t i = 0; i < mine.leaves.size(); ++i)
        all_zero = all_zero && zero(mine.leaves[i].second), ref_zero = ref_zero && zero(ref.leaves[i].second);
    if (all_zero && !ref_zero)
        return fmt::format("every leaf's gradient is 0, {}: the pass ran but carried zeros; does the root's total start "
                           "as grad_output (not an empty Array(), which is one 0)?",
                           at);
    for (std::size_t i = 0; i < mine.leaves.size(); ++i) {
        std::string m = compare_leaf(mine.leaves[i].first, mine.leaves[i].second, ref.leaves[i].second, at);
        if (!m.empty() && twice && mine.leaves[i].second.has_grad()) {
            const Array& a = mine.leaves[i].second.grad_array();
            const Array half = ref.leaves[i].second.grad_array() / 2.f;
            if (grading::diagnose("", a, half, 1e-5 * (1 + static_cast<double>(xt::amax(xt::abs(half))()))).empty())
                m = fmt::format("{}.grad holds one pass's gradient after two, {}: the second pass replaced .grad; a leaf "
                                "adds into it (it accumulates until zero_grad())",
                                mine.leaves[i].first, at);
        }
        if (!m.empty() && !twice) {
            const Graph over = graphs()[gi].build(seed);
            overwriting_pass(over.root, s, false);
            if (over.leaves[i].second.has_grad() && mine.leaves[i].second.has_grad() &&
                grading::diagnose("", mine.leaves[i].second.grad_array(), over.leaves[i].second.grad_array(), 0).empty())
                m.insert(m.rfind(" ("), "; it is what keeping only the last consumer's gradient gives: a tensor with "
                                        "several consumers gets the sum of theirs (lesson 0)");
        }
        if (!m.empty()) return m;
    }
    for (const std::shared_ptr<Node>& n : nodes)
        if (n->released() == twice)
            return twice ? fmt::format("{} was released although retain_graph was true, {}", n->op(), at)
                         : fmt::format("{} still holds its saved values after a pass without retain_graph, {}: release() "
                                       "each node once it has run",
                                       n->op(), at);
    return "";
}

std::string passes_all() {
    for (bool twice : {false, true})
        for (std::size_t gi = 0; gi < graphs().size(); ++gi)
            for (std::uint64_t seed : {1, 2, 3})
                if (std::string m = check_pass(gi, seed, twice); !m.empty()) return m;
    return "";
}

// Tutorial C's Transformer (lesson 8's, small), 8 Adam steps on the Winter Games sentence; the losses.
std::vector<float> train(const BackwardEngine& engine) {
    namespace tc = xtgrad::nn::tutorial_c;
    manual_seed(0);
    tc::Transformer model{tc::Config().d_model(16).d_ff(32).d_k(8).d_v(8).n_layers(2).n_heads(2)};
    optim::Adam opt(model.parameters(), optim::AdamOptions(1e-2));
    const Ids enc{{1, 2, 3, 4, 5, 6, 7}}, dec{{7, 1, 2, 3, 4, 5, 6}};  // 'I like ... Games', 'S 我 ... 奥会'
    const Ids target = {1, 2, 3, 4, 5, 6, 8};                            // '我 ... 奥会 E'
    const EngineScope scope(engine);
    std::vector<float> losses;
    for (int step = 0; step < 8; ++step) {
        opt.zero_grad();
        const Tensor loss = cross_entropy(model.forward(enc, dec).logits, target);
        loss.backward();
        opt.step();
        losses.push_back(loss.item());
    }
    return losses;
}

std::string check_training() {
    std::vector<float> mine;
    grading::set_context("tutorial C's Transformer, 8 Adam steps with your engine");
    try {
        mine = train(ex11::run_backward);
    } catch (const std::exception& e) {
        return fmt::format("training tutorial C's Transformer with your engine threw: {}", e.what());
    }
    const std::vector<float> ref = train(nullptr);
    for (std::size_t i = 0; i < ref.size(); ++i)
        if (mine[i] != ref[i])
            return fmt::format("tutorial C's Transformer, step {} of {}: your engine's loss differs from xtgrad's by {:.3g}{}{}",
                               i + 1, ref.size(), std::abs(mine[i] - ref[i]),
                               i == 0 ? " (the first step: the forward is the same, so the gradient of step 1 was already off)" : "",
                               grading::reveal() ? fmt::format(" [expected {:.9g}, got {:.9g}]", ref[i], mine[i]) : "");
    return "";
}

}  // namespace

TEST_CASE("11_engine: topological_order on 6 graphs, 3 seeds each, and on a chain 300 002 nodes deep") { GRADE(order_all()); }

TEST_CASE("11_engine: your run_backward against xtgrad's engine, bit for bit, once and twice with retain_graph") {
    GRADE(order_all().empty() ? passes_all() : "not graded until the order is right (above)");
}

TEST_CASE("11_engine: tutorial C's Transformer trains with your engine, the same losses bit for bit") {
    std::string m = order_all().empty() ? "" : "not graded until the order is right (above)";
    if (m.empty() && !passes_all().empty()) m = "not graded until your passes match xtgrad's (above)";
    GRADE(m.empty() ? check_training() : m);
}

TEST_SUITE_END();
