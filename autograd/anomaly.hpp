// Anomaly mode (torch.autograd.detect_anomaly): find the op where a NaN or an infinity is
// born, instead of seeing a NaN loss many steps later.
//
//   AnomalyGuard guard;              // or set_anomaly_detection(true), for this thread
//   Tensor loss = model.forward(...);  // forward: every op's output is checked
//   loss.backward();                   // backward: every gradient a node produces is checked
//
// A finding throws xtgrad::Error naming the op (its backward node, e.g. LogBackward), the
// module path of the layer that ran it, and where the node was created: the file:line of
// the make_result() call in the op's code (for the unary math ops that is their shared
// helper in autograd/ops/elementwise.cpp), with the C++ function it is in.
//
// The rule (docs/debugging.md#anomaly-mode):
//   forward   NaN is an error. ±Inf is an error only when the op made it from finite inputs
//             (exp overflow, log(0), x/0); it is allowed when an input already held an
//             infinity or the op is masked_fill, so attention scores masked with -inf, and
//             sums and scalings of them, pass.
//   backward  NaN and ±Inf are both errors: no gradient should be infinite.
// The checks read every value, so anomaly mode is for hunting a bug, not for training;
// when it is off (the default) the cost is one branch per op and per backward node.
#pragma once

#include <xtgrad/autograd/array.hpp>
#include <xtgrad/autograd/source_location.hpp>

#include <string>
#include <vector>

namespace xtgrad {

class Node;
class Tensor;

bool anomaly_detection_enabled();
void set_anomaly_detection(bool on);

class AnomalyGuard {
public:
    explicit AnomalyGuard(bool on = true) : previous_(anomaly_detection_enabled()) { set_anomaly_detection(on); }
    ~AnomalyGuard() { set_anomaly_detection(previous_); }
    AnomalyGuard(const AnomalyGuard&) = delete;
    AnomalyGuard& operator=(const AnomalyGuard&) = delete;

private:
    bool previous_;
};

namespace detail {
// Called by make_result (forward) and the engine (after each node) in anomaly mode.
void check_forward_anomaly(const Array& out, const char* op, const std::vector<Tensor>& inputs,
                           const SourceLocation& where);
void check_backward_anomaly(const Node& node);
// "autograd/ops/elementwise.cpp:27 (xtgrad::Tensor xtgrad::log(const Tensor&))"
std::string describe_location(const SourceLocation& where);
// The index of the first NaN or ±Inf in p[0, n), or n if there is none. Fast enough to run on
// every optimizer step (an integer scan of the exponent bits, split over xtgrad's threads).
std::size_t first_non_finite(const float* p, std::size_t n);
}  // namespace detail

}  // namespace xtgrad
