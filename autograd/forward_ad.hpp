// Forward-mode AD with dual tensors, as torch.autograd.forward_ad:
//
//   {
//       forward_ad::DualLevel level;                       // the scope tangents live in
//       Tensor x = forward_ad::make_dual(primal, tangent); // x carries `tangent`
//       Tensor y = f(x);                                   // every op pushes the tangent on
//       auto [value, jvp] = forward_ad::unpack_dual(y);    // f(primal), J · tangent
//   }                                                      // tangents dropped here
//
// A tangent is a Tensor kept on the tensor's autograd part, tagged with the level that made it
// (never in .grad). Each op computes its output's tangent from its inputs' with its jvp rule,
// written in xtgrad's ops next to its backward (detail::with_jvp, below), so a tangent is itself
// a tensor of the reverse-mode graph: a jvp can be differentiated again. One level at a time:
// a nested DualLevel is an Error (torch allows nesting; xtgrad does not need it yet).
#pragma once

#include <xtgrad/autograd/tensor.hpp>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <vector>

namespace xtgrad::forward_ad {

// The dual level scope: tangents made or computed while it lives are dropped when it ends.
// Constructing one while another is active on this thread is an Error (and changes nothing).
class DualLevel {
public:
    DualLevel();
    ~DualLevel();
    DualLevel(const DualLevel&) = delete;
    DualLevel& operator=(const DualLevel&) = delete;
    std::uint64_t id() const { return id_; }

private:
    std::uint64_t id_;
};

bool dual_level_active();

// A new tensor with primal's values (and its reverse-mode graph, if it has one) carrying
// `tangent` at the active level. Errors: no active level, undefined inputs, shapes that differ,
// a primal that already carries a tangent at this level.
Tensor make_dual(const Tensor& primal, const Tensor& tangent);

struct UnpackedDual {
    Tensor primal;   // t's values, without a tangent
    Tensor tangent;  // undefined when t carries none (or no level is active, as torch)
};
UnpackedDual unpack_dual(const Tensor& t);

}  // namespace xtgrad::forward_ad

namespace xtgrad::detail {

// The active level's id on this thread, 0 when none: the one branch the first-order path pays.
extern thread_local std::uint64_t forward_level;
inline bool forward_active() { return forward_level != 0; }

// Does t carry a tangent (or the mark of an op that had no jvp rule) at the active level?
bool has_tangent(const Tensor& t);
// t's tangent at the active level, undefined when none; an Error naming the op when t came from
// an op that has no jvp rule while a tangent reached it (mark_missing_jvp).
Tensor tangent_of(const Tensor& t);
// Called by attach_grad_fn for every op output while a level is active: if a tangent reached
// the op, the output is marked as lacking one, so reading its tangent is an Error naming the op
// unless the op's jvp rule (with_jvp) then sets it. No rule is never a silent zero.
void mark_missing_jvp(const Tensor& result, const char* op, const std::vector<Tensor>& inputs);

// The inputs' tangents handed to a jvp rule, undefined where an input carries none.
struct Tangents {
    std::vector<Tensor> t;
    const Tensor& operator[](std::size_t i) const { return t[i]; }
    bool has(std::size_t i) const { return t[i].defined(); }
};
using JvpRule = std::function<Tensor(const Tangents&)>;
Tensor apply_jvp(Tensor result, const std::vector<const Tensor*>& inputs, const JvpRule& rule);

// Gives an op's result its tangent: `rule` maps the inputs' tangents to the output's (the
// Jacobian-vector product, in xtgrad's ops, run with the level suspended so it is a plain
// computation; a result of a broadcastable shape is expanded). Without an active level, or
// when no input carries a tangent, returns `result` untouched.
//   return detail::with_jvp(make_result(...), {&a, &b}, [&](const detail::Tangents& t) { ... });
template <class Rule>
Tensor with_jvp(Tensor result, std::initializer_list<const Tensor*> inputs, Rule&& rule) {
    if (!forward_active()) [[likely]]
        return result;
    return apply_jvp(std::move(result), std::vector<const Tensor*>(inputs), JvpRule(std::forward<Rule>(rule)));
}
// The same for an op of a list of inputs (cat).
template <class Rule>
Tensor with_jvp(Tensor result, const std::vector<Tensor>& inputs, Rule&& rule) {
    if (!forward_active()) [[likely]]
        return result;
    std::vector<const Tensor*> in;
    for (const Tensor& t : inputs) in.push_back(&t);
    return apply_jvp(std::move(result), in, JvpRule(std::forward<Rule>(rule)));
}

// Gives t `tangent` at the active level (make_dual without the checks and the new handle): for a
// transform that hands a dual input to f as a new leaf of its own (autograd/func.cpp).
void set_tangent(const Tensor& t, Tensor tangent);

// x + y where either may be undefined (a tangent term of an input that carries none).
Tensor add_terms(const Tensor& x, const Tensor& y);

// Suspends the active level (a jvp rule's own ops compute no tangents).
class ForwardSuspended {
public:
    ForwardSuspended() : previous_(forward_level) { forward_level = 0; }
    ~ForwardSuspended() { forward_level = previous_; }
    ForwardSuspended(const ForwardSuspended&) = delete;
    ForwardSuspended& operator=(const ForwardSuspended&) = delete;

private:
    std::uint64_t previous_;
};

}  // namespace xtgrad::detail
