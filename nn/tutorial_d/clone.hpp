// torch.nn's _get_clones: TransformerEncoder / TransformerDecoder hold num_layers
// copy.deepcopy()s of the layer they are given, so every clone starts with the layer's values
// and owns separate parameters.
#pragma once

#include <xtgrad/random/random.hpp>

#include <memory>

namespace xtgrad::nn::tutorial_d {

// A shared_ptr that does not own `layer` (the aliasing constructor with no owner), for an
// options object that only lends the layer to a constructor that copies it.
template <class Layer>
std::shared_ptr<const Layer> borrowed(const Layer& layer) {
    return std::shared_ptr<const Layer>(std::shared_ptr<void>(), &layer);
}

// A deep copy of `layer`: built from its options, then given its values and its training mode.
// deepcopy draws no random numbers, so the generator is put back after the copy's own
// initialisation: the draws of a model stay torch's, clone for clone.
template <class Layer>
std::shared_ptr<Layer> deep_copy(const Layer& layer, Generator& gen = default_generator()) {
    const Generator before = gen;
    auto copy = std::make_shared<Layer>(layer.options);
    gen = before;
    copy->load_state_dict(layer.state_dict());
    copy->train(layer.is_training());
    return copy;
}

}  // namespace xtgrad::nn::tutorial_d
