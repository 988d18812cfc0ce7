// Exercise 05b: write your predictions, then run the grader:
//   ninja -C build exercises/exercises && build/exercises/exercises -ts=05b_predict_the_trace
// Predict first: running examples/spiral --trace with the changes is how you check afterwards.
#include "exercise.hpp"

namespace ex05b {

std::vector<TraceLine> predicted_trace() {
    // TODO: one {op, grad shape} per node, from the loss down, e.g. {"MulBackward", {4, 5}}
    // for a node MulBackward whose output is 4×5.
    return {};
}

std::string op_replacing_relu() {
    // TODO: the op name on the line where ReluBackward was.
    return "";
}

long negative_entries_into_fc3() {
    // TODO: how many entries of d loss / d logits are below 0.
    return 0;
}

}  // namespace ex05b
