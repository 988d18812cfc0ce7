// Values an op can make again, bit for bit, from what its own backward keeps anyway: layer
// norm's output from its input, mean and rstd (XTGRAD_LAYER_NORM_RECOMPUTE). A node that saves
// such a tensor for its backward (a Linear after the norm) keeps this recipe instead of the
// values (Saved, autograd/node.hpp), so after forward nothing keeps the output: on tutorial B at
// batch 64 its 30 layer norms' outputs are ~355 MiB of the step's peak. The first backward that
// reads it makes it again; the others that saved it share those values while any holds them.
// The recipe holds the op's node weakly: an output kept after backward keeps nothing else alive.
//
// The recipe stands for the values as the op made them (version 0). A write in place bumps
// `last_version` as it bumps the values' version, so a backward that saved them before the write
// still throws ("modified by an inplace operation") after the values themselves are gone.
// Internal.
#pragma once

#include <xtgrad/autograd/array.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

namespace xtgrad {

class Tensor;
struct TensorValues;

struct Recompute {
    // The values again. What they are made from is read through the op's node, whose version
    // checks name it should it have changed (an Error: Saved says which node could not read them).
    std::function<Array()> make;
    const char* what = "";          // the op that made them, for messages: "layer_norm"
    const char* switch_name = "";   // the speed switch whose =0 keeps the values instead, for messages
    std::uint64_t last_version = 0;  // the values' version after their last in-place write
    std::weak_ptr<TensorValues> made;  // the values while anyone holds them (the op's, or made again)
    std::mutex mutex;                  // guards `made` and the making
};

namespace detail {
// Gives `t`'s values (an op's output, as made) their recipe; `what` names the op, `switch_name`
// the speed switch that turns its recipe off.
void set_recompute(const Tensor& t, const char* what, const char* switch_name, std::function<Array()> make);
}  // namespace detail

}  // namespace xtgrad
