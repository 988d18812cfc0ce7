// Exercise 05b: predict a backward pass before running it (docs/learn/05_mlp_spiral.md, part 2).
#pragma once

#include <xtgrad/xtgrad.hpp>

#include <string>
#include <vector>

namespace ex05b {

// One line of `--trace` (XTGRAD_TRACE): the node the engine ran and the shape of the gradient
// flowing into it (d loss / d the node's output).
struct TraceLine {
    std::string op;     // "LinearBackward", ...
    xtgrad::Shape grad;  // {300, 64}, ...; {} for the loss's own node
};

// a. The spiral MLP with a second hidden layer, on the 300 spiral points:
//      logits = fc3(relu(fc2(relu(fc1(x)))))   fc1 2->64, fc2 64->64, fc3 64->3
//      loss   = cross_entropy(logits, labels)   (labels: 100 points of each of the 3 classes)
//    Every line of loss.backward()'s trace, in the order the engine runs them.
std::vector<TraceLine> predicted_trace();

// b. The same model with tanh in place of relu: the op whose line replaces ReluBackward.
std::string op_replacing_relu();

// c. The gradient flowing into fc3's LinearBackward is d loss / d logits, (300,3): how many of
//    its 900 entries are negative? Derive it from cross-entropy's gradient; no run prints it.
long negative_entries_into_fc3();

}  // namespace ex05b
