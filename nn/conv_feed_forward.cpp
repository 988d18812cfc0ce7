#include <xtgrad/nn/conv_feed_forward.hpp>

#include <xtgrad/autograd/error.hpp>

namespace xtgrad::nn {

ConvFeedForward::ConvFeedForward(const ConvFeedForwardOptions& o, const char* type) : options(o), type_(type) {
    if (o.d_model() == 0 || o.d_ff() == 0)
        fail("{}: d_model ({}) and d_ff ({}) must be positive", type, o.d_model(), o.d_ff());
    const ConvNames& names = o.conv_names();
    if (names.first.empty() || names.second.empty() || names.first == names.second)
        fail("{}: the two convolutions need two distinct names, got '{}' and '{}'", type, names.first, names.second);
    w1 = register_module(names.first, std::make_shared<Conv1d>(o.d_model(), o.d_ff(), 1));
    w2 = register_module(names.second, std::make_shared<Conv1d>(o.d_ff(), o.d_model(), 1));
    dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout()));
    LayerNormChoice ln = make_layer_norm(o.layer_norm(), o.d_model());
    layer_norm = register_module("layer_norm", ln.module);
    norm_ = ln.forward;
}

// x (B, L, d) -> (B, L, d)
Tensor ConvFeedForward::forward(const Tensor& x) const {
    auto scope = enter(x);
    if (x.dim() != 3 || x.size(2) != options.d_model())
        module_error(*this, type_, fmt::format("x must be (batch, len, {}), got {}", options.d_model(), shape_str(x.shape())));
    if (x.size(1) == 0)  // as torch's Conv1d: "Kernel size can't be greater than actual input size"
        module_error(*this, type_,
                     fmt::format("x {} is a sequence of length 0; a kernel-1 Conv1d needs at least one position "
                                 "(torch's Conv1d refuses it too)",
                                 shape_str(x.shape())));
    Tensor output = transpose(x, 1, 2);                  // (B, d, L): channels first
    output = w2->forward(relu(w1->forward(output)));     // (B, ff, L) -> (B, d, L)
    output = dropout->forward(transpose(output, 1, 2));  // (B, L, d)
    return scope.output(norm_(x + output));
}

}  // namespace xtgrad::nn
