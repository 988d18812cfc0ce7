// What tutorial D's test files share: small layer options, parameter names, and random
// parameters and padding for gradchecks.
#pragma once

#include <xtgrad/nn/tutorial_d/tutorial_d.hpp>
#include "tests/test_util.hpp"

#include <limits>
#include <string>
#include <vector>

namespace xtgrad::test::tutorial_d {

using namespace xtgrad::nn::tutorial_d;
using V = std::vector<Tensor>;

using xtgrad::test::kInf;  // tests/test_util.hpp

// Small sizes: E 8, 2 heads, ff 12. gelu keeps the functions smooth for finite differences
// (relu's kink is covered by the parity fixtures).
template <class Options = TransformerEncoderLayerOptions>
Options small_layer(bool batch_first = false, bool norm_first = false) {
    return Options(8, 2)
        .dim_feedforward(12)
        .dropout(0.f)
        .activation(Activation::gelu)
        .layer_norm_eps(1e-5f)
        .batch_first(batch_first)
        .norm_first(norm_first);
}

// A Transformer of the same small sizes.
inline TransformerOptions small_transformer(std::size_t encoder_layers = 1, std::size_t decoder_layers = 1) {
    return TransformerOptions(8, 2, encoder_layers, decoder_layers).dim_feedforward(12).dropout(0.f);
}

inline std::vector<std::string> names_of(const nn::Module& m) {
    std::vector<std::string> out;
    for (const auto& [name, t] : m.named_parameters()) out.push_back(name);
    return out;
}

// The inputs followed by every parameter of m, so gradcheck perturbs both.
inline V with_parameters(V inputs, const nn::Module& m) {
    for (const Tensor& p : m.parameters()) inputs.push_back(p);
    return inputs;
}

// Biases and LayerNorm weights start constant; random values make every term matter.
inline void randomize(nn::Module& m, std::uint64_t seed) {
    Generator g(seed);
    for (Tensor& p : m.parameters())
        for (float& v : p.mutable_data()) v += 0.1f * g.normal();
}

inline Mask padding_mask(std::size_t N, std::size_t L, std::size_t real_len_of_row0) {
    Mask m = xt::zeros<bool>({N, L});
    for (std::size_t j = real_len_of_row0; j < L; ++j) m(0, j) = true;  // row 0 padded, the others full
    return m;
}

}  // namespace xtgrad::test::tutorial_d
