// The options of torch.nn.TransformerEncoderLayer / TransformerDecoderLayer (tutorial D,
// "Encoder Layer", "Decoder Layer"), as the PyTorch C++ frontend spells them:
//   TransformerEncoderLayerOptions(512, 8).dim_feedforward(1024).dropout(0.f).activation(Activation::gelu)
// Required: d_model, nhead. The defaults are torch's and the tutorial's.
#pragma once

#include <xtgrad/autograd/tensor.hpp>
#include <xtgrad/nn/options.hpp>

#include <cstddef>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

namespace xtgrad::nn::tutorial_d {

// The feed-forward activation, a callable as torch accepts one: Activation::relu,
// Activation::gelu (the exact erf form, torch's F.gelu default), the names "relu" / "gelu"
// (torch's strings), or any function Tensor(const Tensor&) of your own.
class Activation {
public:
    using Fn = std::function<Tensor(const Tensor&)>;
    static const Activation relu;
    static const Activation gelu;

    Activation(const char* name);  // "relu" | "gelu", as torch's activation="relu"; Error otherwise
    Activation(std::string name, Fn fn);
    template <class F>
        requires(!std::is_same_v<std::decay_t<F>, Activation> && std::is_invocable_r_v<Tensor, F, const Tensor&>)
    Activation(F&& f) : name_("custom"), fn_(std::forward<F>(f)) {}

    Tensor operator()(const Tensor& x) const { return fn_(x); }
    const std::string& name() const { return name_; }  // "relu", "gelu", or "custom"
    // Activation::relu or a copy of it (not a function of your own named "relu"): feed_forward
    // may then fuse it with the dropout after it.
    bool is_library_relu() const { return library_relu_; }

private:
    std::string name_;
    Fn fn_;
    bool library_relu_ = false;
};

Activation activation_from_string(const std::string& name);  // "relu" | "gelu"; Error otherwise
const char* to_string(const Activation& a);

// The options both layer types share; Tag makes TransformerEncoderLayerOptions and
// TransformerDecoderLayerOptions two types, as in torch's C++ frontend.
template <class Tag>
class TransformerLayerOptionsOf {
public:
    TransformerLayerOptionsOf(std::size_t d_model, std::size_t nhead) : d_model_(d_model), nhead_(nhead) {}
    // torch's positional order, TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout,
    // activation, layer_norm_eps, batch_first, norm_first): both layers' positional constructors
    // come through here.
    static TransformerLayerOptionsOf positional(std::size_t d_model, std::size_t nhead, std::size_t dim_feedforward,
                                                float dropout, Activation activation, float layer_norm_eps,
                                                bool batch_first, bool norm_first) {
        return TransformerLayerOptionsOf(d_model, nhead)
            .dim_feedforward(dim_feedforward)
            .dropout(dropout)
            .activation(std::move(activation))
            .layer_norm_eps(layer_norm_eps)
            .batch_first(batch_first)
            .norm_first(norm_first);
    }

    XTGRAD_ARG(std::size_t, d_model);
    XTGRAD_ARG(std::size_t, nhead);
    XTGRAD_ARG(std::size_t, dim_feedforward) = 2048;
    XTGRAD_ARG(float, dropout) = 0.1f;
    XTGRAD_ARG(Activation, activation) = Activation::relu;
    XTGRAD_ARG(float, layer_norm_eps) = 1e-5f;
    XTGRAD_ARG(bool, batch_first) = false;  // (N, L, E) instead of (L, N, E)
    XTGRAD_ARG(bool, norm_first) = false;   // pre-norm x + f(norm(x)); torch's default (and the tutorial's) is post-norm
};

using TransformerEncoderLayerOptions = TransformerLayerOptionsOf<struct EncoderLayerTag>;
using TransformerDecoderLayerOptions = TransformerLayerOptionsOf<struct DecoderLayerTag>;

}  // namespace xtgrad::nn::tutorial_d
