#include "nn/tutorial_d/layer_options.hpp"

#include "autograd/error.hpp"

namespace xtgrad::nn::tutorial_d {

Activation activation_from_string(const std::string& name) {
    if (name == "relu") return Activation::relu;
    if (name == "gelu") return Activation::gelu;
    fail("activation should be relu/gelu, not {}", name);
}

const char* to_string(Activation a) { return a == Activation::relu ? "relu" : "gelu"; }

}  // namespace xtgrad::nn::tutorial_d
