#include "tools/parity/rng_checks.hpp"

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/random/random.hpp>
#include <xtgrad/nn/tutorial_b/transformer.hpp>
#include <xtgrad/optim/optimizer.hpp>

#include <fmt/format.h>

#include <map>

namespace xtgrad::parity {

void check_init(const Fixture& f, const Builder& build, Report& r) {
    manual_seed(f.meta().at("seed").get<std::uint64_t>());
    const std::shared_ptr<nn::Module> model = build(f);
    std::map<std::string, Tensor> trainable;
    for (const auto& [name, t] : model->named_parameters())
        if (t.requires_grad()) trainable.emplace(name, t);
    const json ulps = f.meta().value("ulps", json::object());
    const nn::NamedTensors reference = f.state();
    for (const auto& [name, ref] : reference) {
        auto it = trainable.find(name);
        if (it == trainable.end()) {
            r.fail(name, "not a trainable parameter of xtgrad's model");
            continue;
        }
        r.compare_ulps(name, it->second.data(), ref.data(), ulps.value("param." + name, 0L));
    }
    if (trainable.size() != reference.size())
        r.fail("named_parameters", fmt::format("xtgrad's model has {} trainable parameters, torch's {}", trainable.size(),
                                               reference.size()));
}

void check_train_log(const Fixture& f, Report& r) {
    const auto n = [&f](const char* key) { return static_cast<std::size_t>(f.cfg_int(key)); };
    const std::size_t vocab = n("tgt_vocab_size"), len = n("max_seq_length");
    manual_seed(f.meta().at("seed").get<std::uint64_t>());
    nn::tutorial_b::Transformer model(n("src_vocab_size"), vocab, n("d_model"), n("num_heads"), n("num_layers"), n("d_ff"),
                                      len, static_cast<float>(f.cfg_float("dropout")));
    // torch.randint(1, V, (batch, len)) for src, then tgt
    const Ids src = randint({n("batch"), len}, 1, static_cast<std::int64_t>(n("src_vocab_size")), default_generator());
    const Ids tgt = randint({n("batch"), len}, 1, static_cast<std::int64_t>(vocab), default_generator());
    r.compare_exact("input.src", src, f.ids("input.src"));
    r.compare_exact("input.tgt", tgt, f.ids("input.tgt"));
    const nn::tutorial_b::ShiftedTargets shifted = nn::tutorial_b::shift_targets(tgt);
    optim::Adam opt(model.parameters(), optim::AdamOptions(f.cfg_float("lr")).betas({0.9, 0.98}).eps(1e-9));
    model.train();
    const Array torch_losses = f.floats("losses");
    const auto steps = static_cast<std::size_t>(f.cfg_int("steps", 1, kMaxFixtureSteps));
    if (torch_losses.size() != steps)
        xtgrad::fail("parity: {}: config.steps is {} but losses.npy holds {} losses", f.dir(), steps, torch_losses.size());
    Array losses = torch_losses;  // same shape; every step overwritten
    for (std::size_t step = 0; step < torch_losses.size(); ++step) {
        opt.zero_grad();
        const Tensor logits = model.forward(src, shifted.input);
        Tensor loss = cross_entropy(reshape(logits, {-1, static_cast<long>(vocab)}), shifted.target, /*ignore_index=*/0);
        loss.backward();
        opt.step();
        losses(step) = loss.item();
    }
    r.compare("losses", losses, torch_losses, Tolerance{.rtol = 0.0, .atol = 1e-4});
}

}  // namespace xtgrad::parity
