// Inverted dropout: training keeps each element with probability 1 - p and scales it by
// 1 / (1 - p), so eval mode is the identity and the expected activation is unchanged.
#include "autograd/ops.hpp"
#include "autograd/ops/saved.hpp"
#include "autograd/random.hpp"

#include <memory>

namespace xtgrad {

Tensor dropout(const Tensor& a, float p, bool training, Generator& gen) {
    detail::require_defined(a, "dropout", "the input");
    if (!(p >= 0.f && p <= 1.f)) fail("dropout: probability must be in [0, 1], got {}", p);
    if (!training || p == 0.f) return a;
    auto scale = std::make_shared<Array>(empty_array(a.shape()));  // 0 or 1/(1-p) per element
    const float keep = p == 1.f ? 0.f : 1.f / (1.f - p);
    std::bernoulli_distribution drop(p);
    for (float& s : *scale) s = drop(gen.engine()) ? 0.f : keep;
    Array out = a.data() * *scale;
    return make_result(std::move(out), "DropoutBackward", {a}, [scale](Node& self, const Array& g) {
        self.accumulate(0, Array(g * *scale));
    });
}

}  // namespace xtgrad
