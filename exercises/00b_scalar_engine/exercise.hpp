// Exercise 00b: an autograd engine of your own, for scalars, from nothing
// (docs/learn/00b_scalar_engine.md): a Value, four ops, the topological order and the reverse
// loop. The grader builds expressions with your ops and compares every gradient with finite
// differences and with xtgrad's own autograd on the same expressions.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ex00b {

struct Value;
using V = std::shared_ptr<Value>;

// One number of a computation, and what backward needs to know about it.
struct Value {
    double data = 0;                    // computed by the forward
    double grad = 0;                    // dL/d(this value), filled in by backward(L)
    std::vector<V> parents;             // the values it was computed from, in order: mul(a, a) lists a twice
    std::string op;                     // "+", "*", "tanh", "exp"; "" for a leaf
    std::function<void()> backward_fn;  // sends this value's grad on to its parents' grads; empty for a leaf
};

// An input: a value with no parents (given).
inline V leaf(double x) {
    V v = std::make_shared<Value>();
    v->data = x;
    return v;
}

// The ops: each returns a new Value with its data, parents, op name and backward_fn. The closure
// runs after the result's grad is complete, and may run in a graph where its inputs are used
// elsewhere too. It must not hold the result itself by a V (a cycle: never freed): capture a
// plain Value* to it.
V add(const V& a, const V& b);  // a + b
V mul(const V& a, const V& b);  // a · b
V tanh(const V& a);
V exp(const V& a);

// Every value reached from root through parents, each once, each AFTER all its parents (so root
// is last). Without recursion: the grader builds a chain 200000 values deep.
std::vector<Value*> topological_order(const V& root);

// root->grad = 1, then every backward_fn in the reverse of topological_order(root). It does not
// zero any grad first: like xtgrad's .grad, grads accumulate across calls.
void backward(const V& root);

}  // namespace ex00b
