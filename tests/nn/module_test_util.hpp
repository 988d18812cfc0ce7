// Helpers the module tests of every tutorial share.
#pragma once

#include <xtgrad/nn/module.hpp>
#include "tests/test_util.hpp"
#include <xtgrad/xtgrad.hpp>

#include <string>
#include <vector>

namespace xtgrad::test {

// The FFN's ReLU has a kink at 0: a finite-difference step of gradcheck's default 1e-2 that
// crosses it (a pre-activation within 1e-2 of 0, common among hundreds) gives a wrong
// numeric slope. Steps of 1e-3 rarely cross it and stay far above float32 noise here.
inline const GradcheckOptions kReluSafe = [] {
    GradcheckOptions o;
    o.eps = 1e-3;
    return o;
}();

// xs, then the trainable parameters of m: everything gradcheck should perturb.
inline std::vector<Tensor> with_parameters(const nn::Module& m, std::vector<Tensor> xs = {}) {
    for (const Tensor& p : m.parameters())
        if (p.requires_grad()) xs.push_back(p);
    return xs;
}

// The names of a named_parameters() / named_buffers() list, in order.
inline std::vector<std::string> names_of(const nn::NamedTensors& list) {
    std::vector<std::string> out;
    for (auto& [name, t] : list) out.push_back(name);
    return out;
}

// A module built from its Options and the same module from its positional constructor, each
// after the same seed: the state names and every initial value agree (docs/architecture.md, "Module options").
template <class FromOptions, class Positional>
void same_module(FromOptions&& from_options, Positional&& positional) {
    manual_seed(3);
    auto a = from_options();
    manual_seed(3);
    auto b = positional();
    const nn::NamedTensors pa = a.named_parameters(), pb = b.named_parameters();
    REQUIRE(names_of(pa) == names_of(pb));
    CHECK_FALSE(pa.empty());
    for (std::size_t i = 0; i < pa.size(); ++i) {
        CAPTURE(pa[i].first);
        CHECK(pa[i].second.shape() == pb[i].second.shape());
        CHECK(xt::all(xt::equal(pa[i].second.data(), pb[i].second.data())));
    }
}

}  // namespace xtgrad::test
