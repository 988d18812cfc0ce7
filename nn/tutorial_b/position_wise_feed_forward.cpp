#include <xtgrad/nn/tutorial_b/position_wise_feed_forward.hpp>

#include <xtgrad/autograd/error.hpp>

namespace xtgrad::nn::tutorial_b {

PositionWiseFeedForward::PositionWiseFeedForward(const PositionWiseFeedForwardOptions& o) {
    fc1 = register_module("fc1", std::make_shared<Linear>(o.d_model(), o.d_ff()));
    fc2 = register_module("fc2", std::make_shared<Linear>(o.d_ff(), o.d_model()));
    relu = register_module("relu", std::make_shared<ReLU>());
}

Tensor PositionWiseFeedForward::forward(const Tensor& x) const {
    auto scope = enter(x);
    const std::size_t d_model = fc1->weight.size(1);
    if (x.dim() == 0 || x.size(-1) != d_model)
        module_error(*this, "tutorial_b::PositionWiseFeedForward",
                     fmt::format("input {} does not end in d_model {}", shape_str(x.shape()), d_model));
    return scope.output(fc2->forward(relu->forward(fc1->forward(x))));
}

}  // namespace xtgrad::nn::tutorial_b
