#include <xtgrad/nn/tutorial_d/layer_options.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/ops.hpp>

namespace xtgrad::nn::tutorial_d {

const Activation Activation::relu = [] {
    Activation a("relu", [](const Tensor& x) { return xtgrad::relu(x); });
    a.library_relu_ = true;
    return a;
}();
const Activation Activation::gelu("gelu", [](const Tensor& x) { return xtgrad::gelu(x); });

Activation::Activation(std::string name, Fn fn) : name_(std::move(name)), fn_(std::move(fn)) {
    if (!fn_) fail("Activation '{}': the function is empty", name_);
}

Activation::Activation(const char* name) : Activation(activation_from_string(name)) {}

Activation activation_from_string(const std::string& name) {
    if (name == "relu") return Activation::relu;
    if (name == "gelu") return Activation::gelu;
    fail("TransformerEncoderLayer/TransformerDecoderLayer: activation should be relu/gelu, not {}", name);
}

const char* to_string(const Activation& a) { return a.name().c_str(); }

}  // namespace xtgrad::nn::tutorial_d
