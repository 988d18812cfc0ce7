// Exercise 11, solved: xtgrad's own order (a depth-first post-order, inputs first to last,
// with an explicit stack), then the reverse walk summing into a map.
#include "exercise.hpp"

#include <unordered_map>
#include <unordered_set>

namespace ex11 {

using namespace xtgrad;

std::vector<ImplPtr> topological_order(const Tensor& root) {
    std::vector<ImplPtr> order;
    std::unordered_set<const TensorImpl*> seen{root.impl()};
    std::vector<std::pair<ImplPtr, std::size_t>> stack{{root.impl_ptr(), 0}};  // a tensor, its next input
    while (!stack.empty()) {
        auto& [t, next] = stack.back();
        if (t->grad_fn && next < t->grad_fn->inputs().size()) {
            const ImplPtr in = t->grad_fn->inputs()[next++];
            if (in && in->requires_grad && seen.insert(in.get()).second) stack.emplace_back(in, 0);
        } else {
            order.push_back(t);  // after everything it depends on
            stack.pop_back();
        }
    }
    return order;
}

void run_backward(const Tensor& root, const Array& grad_output, bool retain_graph) {
    const std::vector<ImplPtr> order = topological_order(root);
    std::unordered_map<const TensorImpl*, Array> total{{root.impl(), grad_output}};
    for (auto it = order.rbegin(); it != order.rend(); ++it) {  // consumers before what they consume
        TensorImpl& t = **it;
        const auto found = total.find(&t);
        if (found == total.end()) continue;  // nothing reached it
        const Array g = std::move(found->second);
        total.erase(found);
        if (!t.grad_fn) {  // a leaf: into .grad, which accumulates
            if (t.grad)
                *t.grad += g;
            else
                t.grad = std::make_shared<Array>(g);
            continue;
        }
        std::vector<std::shared_ptr<Array>> sink;
        t.grad_fn->run_into(g, sink);
        for (std::size_t i = 0; i < sink.size(); ++i) {
            if (!sink[i]) continue;
            const auto [slot, first] = total.try_emplace(t.grad_fn->inputs()[i].get(), *sink[i]);
            if (!first) slot->second += *sink[i];  // a tensor used twice: the sum
        }
        if (!retain_graph) t.grad_fn->release();
    }
}

}  // namespace ex11
