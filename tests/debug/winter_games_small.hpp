// Tutorial C's Winter Games Transformer at a test size, and its one sentence pair
// (ids as tutorial_c::make_batch with the fixed vocabularies: PAD = 0, one id per word).
#pragma once

#include <xtgrad/nn/tutorial_c/tutorial_c.hpp>
#include <xtgrad/xtgrad.hpp>

#include <memory>

namespace xtgrad::test {

inline nn::tutorial_c::Config small_config() {
    return nn::tutorial_c::Config().d_model(16).d_ff(32).d_k(8).d_v(8).n_layers(1).n_heads(2);
}

struct WinterGames {
    std::unique_ptr<nn::tutorial_c::Transformer> model;
    Tensor loss;
};

// A fresh model (seeded) and its loss on 'I like the 2022 Beijing Winter Games'.
inline WinterGames winter_games_loss(std::uint64_t seed = 0) {
    manual_seed(seed);
    WinterGames w{std::make_unique<nn::tutorial_c::Transformer>(small_config()), {}};
    const Ids enc{{1, 2, 3, 4, 5, 6, 7}}, dec{{7, 1, 2, 3, 4, 5, 6}}, target{1, 2, 3, 4, 5, 6, 8};
    w.loss = cross_entropy(w.model->forward(enc, dec).logits, target);
    return w;
}

}  // namespace xtgrad::test
