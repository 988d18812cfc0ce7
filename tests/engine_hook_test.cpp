// set_backward_engine: an engine written with the public parts only (the learner path's
// capstone) replaces xtgrad's, and gives its gradients bit for bit.
#include "tests/test_util.hpp"

#include <unordered_map>
#include <unordered_set>

TEST_SUITE_BEGIN("engine");

using namespace xtgrad;
using test::rnd;

namespace {
// micrograd's loop over xtgrad's nodes: post-order, then in reverse each node's input gradients
// (Node::run_into) summed into a map; a leaf adds its total into .grad.
void small_engine(const Tensor& root, const Array& seed, bool retain_graph) {
    std::vector<ImplPtr> order;
    std::unordered_set<const TensorImpl*> seen{root.impl()};
    std::vector<std::pair<ImplPtr, std::size_t>> stack{{root.impl_ptr(), 0}};
    while (!stack.empty()) {
        auto& [t, next] = stack.back();
        if (t->grad_fn && next < t->grad_fn->inputs().size()) {
            const ImplPtr in = t->grad_fn->inputs()[next++];
            if (in && in->requires_grad && seen.insert(in.get()).second) stack.emplace_back(in, 0);
        } else {
            order.push_back(t);
            stack.pop_back();
        }
    }
    std::unordered_map<const TensorImpl*, Array> grads{{root.impl(), seed}};
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        TensorImpl& t = **it;
        auto found = grads.find(&t);
        if (found == grads.end()) continue;
        const Array g = std::move(found->second);
        grads.erase(found);
        if (!t.grad_fn) {
            if (t.grad) *t.grad += g;
            else t.grad = std::make_shared<Array>(g);
            continue;
        }
        std::vector<std::shared_ptr<Array>> sink;
        t.grad_fn->run_into(g, sink);
        for (std::size_t i = 0; i < sink.size(); ++i) {
            if (!sink[i]) continue;
            auto [slot, fresh] = grads.try_emplace(t.grad_fn->inputs()[i].get(), *sink[i]);
            if (!fresh) slot->second += *sink[i];
        }
        if (!retain_graph) t.grad_fn->release();
    }
}

struct EngineScope {
    explicit EngineScope(BackwardEngine e) { set_backward_engine(std::move(e)); }
    ~EngineScope() { set_backward_engine(nullptr); }
};
}  // namespace

TEST_CASE("set_backward_engine: a twenty-line engine gives xtgrad's gradients bit for bit") {
    Tensor x = rnd({4, 3}, 1), w1 = rnd({5, 3}, 2), b1 = rnd({5}, 3), w2 = rnd({2, 5}, 4);
    const auto loss = [&] {
        const Tensor h = tanh(linear(x, w1, b1));
        // h used twice (a diamond), w1 used twice (shared)
        return sum(mul(linear(add(h, mul(h, h)), w2), sum(w1)));
    };
    loss().backward();
    const std::vector<Array> library{x.grad_array(), w1.grad_array(), b1.grad_array(), w2.grad_array()};
    for (Tensor* t : {&x, &w1, &b1, &w2}) t->zero_grad();
    int passes = 0;
    {
        EngineScope scope([&](const Tensor& root, const Array& seed, bool retain) {
            ++passes;
            small_engine(root, seed, retain);
        });
        loss().backward();
    }
    CHECK(passes == 1);
    const std::vector<Array> mine{x.grad_array(), w1.grad_array(), b1.grad_array(), w2.grad_array()};
    for (std::size_t i = 0; i < mine.size(); ++i) CHECK(test::max_abs_diff(mine[i], library[i]) == 0.f);
    // unset: xtgrad's engine again
    loss().backward();
    CHECK(passes == 1);
}

TEST_CASE("set_backward_engine: an engine that calls backward() itself is an Error, not endless recursion") {
    Tensor x = rnd({3}, 5);
    {
        EngineScope scope([](const Tensor& root, const Array&, bool) { root.backward(); });
        test::expect_error([&] { sum(mul(x, x)).backward(); }, {"set_backward_engine", "run that engine again", "run_library_backward"});
    }
    {  // the library's engine stays reachable from inside one
        EngineScope scope([](const Tensor& root, const Array& seed, bool retain) {
            run_library_backward(root.impl_ptr(), seed, retain);
        });
        sum(mul(x, x)).backward();
    }
    CHECK(x.grad_array()(1) == doctest::Approx(2 * x.ptr()[1]));
}

TEST_SUITE_END();
