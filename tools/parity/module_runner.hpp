// The common shape of a module fixture run (docs/fixtures.md, sections The loss and meta.json): load the state, call
// forward with the fixture's inputs, compare output and aux outputs, backpropagate
// loss = sum(output * R) and compare every input and parameter gradient.
// A runner only says how to build the module and how to call it.
#pragma once

#include "tools/parity/fixture.hpp"

#include <map>
#include <memory>

namespace xtgrad::parity {

// The fixture's inputs. Float inputs marked differentiable come back requiring grad, and
// the same Tensor each time, so their gradients can be read after backward.
class Inputs {
public:
    explicit Inputs(const Fixture& f) : f_(f) {}
    Tensor tensor(const std::string& name);
    Array floats(const std::string& name) const { return f_.floats("input." + name); }
    Ids ids(const std::string& name) const { return f_.ids("input." + name); }
    Mask mask(const std::string& name) const { return f_.mask("input." + name); }
    bool has(const std::string& name) const { return f_.has("input." + name); }
    const std::map<std::string, Tensor>& used() const { return tensors_; }

private:
    const Fixture& f_;
    std::map<std::string, Tensor> tensors_;
};

struct Outputs {
    Outputs() = default;
    Outputs(Tensor out) : output(std::move(out)) {}  // NOLINT: implicit, so a runner can return its tensor
    Tensor output;  // float output (the loss is taken on it)
    Ids output_ids;
    Mask output_mask;
    std::map<std::string, Tensor> aux;
    std::map<std::string, Ids> aux_ids;
    std::map<std::string, Mask> aux_masks;
};

using Forward = std::function<Outputs(Inputs&)>;

// module may be null for function fixtures (masks, tables).
void check_module(const Fixture& f, Report& r, nn::Module* module, const Forward& forward);

// Registers a runner that builds a module with `build` and runs `forward` on it.
template <class M>
void register_module_runner(const std::string& id, std::function<std::shared_ptr<M>(const Fixture&)> build,
                            std::function<Outputs(M&, Inputs&)> forward) {
    register_runner(id, [build, forward](const Fixture& f, Report& r) {
        std::shared_ptr<M> m = build(f);
        check_module(f, r, m.get(), [&](Inputs& in) { return forward(*m, in); });
    });
    register_builder(id, [build](const Fixture& f) -> std::shared_ptr<nn::Module> { return build(f); });
}

}  // namespace xtgrad::parity
