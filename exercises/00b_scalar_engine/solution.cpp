// Exercise 00b, solved: each op's closure adds (+=) its share into its parents, since a value
// used twice gets the sum of its uses (lesson 0); the order is a depth-first post-order kept on
// an explicit stack; backward walks it from the root.
#include "exercise.hpp"

#include <cmath>
#include <unordered_set>
#include <utility>

namespace ex00b {

namespace {
V result(double data, std::vector<V> parents, std::string op) {
    V out = leaf(data);
    out->parents = std::move(parents);
    out->op = std::move(op);
    return out;
}
}  // namespace

V add(const V& a, const V& b) {
    V out = result(a->data + b->data, {a, b}, "+");
    Value* self = out.get();  // not out: the closure lives in *out
    out->backward_fn = [self] {
        self->parents[0]->grad += self->grad;  // d(a + b)/da = 1
        self->parents[1]->grad += self->grad;
    };
    return out;
}

V mul(const V& a, const V& b) {
    V out = result(a->data * b->data, {a, b}, "*");
    Value* self = out.get();
    out->backward_fn = [self] {
        Value& x = *self->parents[0];
        Value& y = *self->parents[1];
        x.grad += y.data * self->grad;  // the other factor; mul(a, a) adds twice into a
        y.grad += x.data * self->grad;
    };
    return out;
}

V tanh(const V& a) {
    V out = result(std::tanh(a->data), {a}, "tanh");
    Value* self = out.get();
    out->backward_fn = [self] { self->parents[0]->grad += (1 - self->data * self->data) * self->grad; };
    return out;
}

V exp(const V& a) {
    V out = result(std::exp(a->data), {a}, "exp");
    Value* self = out.get();
    out->backward_fn = [self] { self->parents[0]->grad += self->data * self->grad; };
    return out;
}

std::vector<Value*> topological_order(const V& root) {
    std::vector<Value*> order;
    std::unordered_set<Value*> seen{root.get()};
    std::vector<std::pair<Value*, std::size_t>> stack{{root.get(), 0}};  // a value, its next parent
    while (!stack.empty()) {
        auto& [v, next] = stack.back();
        if (next < v->parents.size()) {
            Value* p = v->parents[next++].get();
            if (seen.insert(p).second) stack.emplace_back(p, 0);
        } else {
            order.push_back(v);  // all its parents are in already
            stack.pop_back();
        }
    }
    return order;
}

void backward(const V& root) {
    const std::vector<Value*> order = topological_order(root);
    root->grad = 1;
    for (auto it = order.rbegin(); it != order.rend(); ++it)  // every consumer before what it consumes
        if ((*it)->backward_fn) (*it)->backward_fn();
}

}  // namespace ex00b
