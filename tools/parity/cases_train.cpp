// Runners for the training fixtures (docs/fixtures.md, section Training-run cases): K full steps of zero_grad,
// forward, cross-entropy, backward and Adam on tutorial B's and C's Transformers. The loss
// of every step and every parameter after the last step are compared; parameters whose
// float32 gradients are rounding noise (key biases) are compared with noise_driven_atol.
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/optim/optimizer.hpp>
#include "tools/parity/models.hpp"
#include "tools/parity/module_runner.hpp"
#include "tools/parity/register_all.hpp"

#include <set>

namespace xtgrad::parity {

namespace {

using Logits = std::function<Tensor(const Ids&, const Ids&)>;

void run_training(const Fixture& f, Report& r, nn::Module& model, const Logits& logits_of) {
    model.load_state_dict(f.state(), /*strict=*/true);
    model.train();  // dropout is 0 in the fixtures, so train mode computes what eval does
    const json& t = f.meta().at("training");
    const json& h = t.at("hyper");
    optim::Adam opt(model.parameters(), optim::AdamOptions(h.at("lr"))
                                            .betas({h.at("betas")[0], h.at("betas")[1]})
                                            .eps(h.at("eps"))
                                            .weight_decay(h.value("weight_decay", 0.0)));
    const json& args = t.at("loss_args");
    const long ignore = args.value("ignore_index", -100L);
    const float smoothing = args.value("label_smoothing", 0.f);

    // the model's two inputs: meta.call_order, or (export_fixture.py writes none for training
    // cases) the inputs in file order, without the target
    std::vector<std::string> order;
    for (const json& n : f.meta().value("call_order", json::array())) order.push_back(n.get<std::string>());
    if (order.empty())
        for (const json& in : f.meta().at("inputs"))
            if (in.at("name") != "target") order.push_back(in.at("name").get<std::string>());
    if (order.size() != 2) xtgrad::fail("parity: {}: expected two model inputs, found {}", f.dir(), order.size());
    const Ids a = f.ids("input." + order[0]), b = f.ids("input." + order[1]);
    Ids target = f.ids("input.target");
    target.reshape({target.size()});
    const long steps = t.at("steps");  // 1 to kMaxFixtureSteps (fixture_meta.cpp)
    const Array torch_losses = f.floats("losses");
    if (torch_losses.size() != static_cast<std::size_t>(steps))
        xtgrad::fail("parity: {}: training.steps is {} but losses.npy holds {} losses", f.dir(), steps, torch_losses.size());
    Array losses = Array::from_shape({static_cast<std::size_t>(steps)});
    for (long k = 0; k < steps; ++k) {
        opt.zero_grad();
        Tensor logits = logits_of(a, b);
        Tensor loss = cross_entropy(reshape(logits, {-1, static_cast<long>(logits.size(-1))}), target, ignore, smoothing);
        losses(static_cast<std::size_t>(k)) = loss.item();
        loss.backward();
        opt.step();
    }
    const Tolerance tol = f.tolerance();
    r.compare("losses", losses, torch_losses, tol);
    std::set<std::string> noisy;
    for (const json& n : t.value("noise_driven_params", json::array())) noisy.insert(n.get<std::string>());
    const double noise_atol = t.value("noise_driven_atol", 0.0);
    for (auto& [name, p] : model.named_parameters()) {
        const std::string key = "final.param." + name;
        if (!f.has(key)) continue;  // frozen tables are not trained and not in the fixture
        if (noisy.count(name))
            r.compare(key, p.data(), f.floats(key), Tolerance{0.0, noise_atol});
        else
            r.compare(key, p.data(), f.floats(key), tol);
    }
}

}  // namespace

void register_train_runners() {
    register_runner("train_transformer_b", [](const Fixture& f, Report& r) {
        auto m = build_transformer_b(f);
        run_training(f, r, *m, [&](const Ids& src, const Ids& tgt) { return m->forward(src, tgt); });
    });
    register_runner("train_transformer_c", [](const Fixture& f, Report& r) {
        nn::tutorial_c::Transformer m(transformer_c_config(f));
        run_training(f, r, m, [&](const Ids& enc, const Ids& dec) { return m.forward(enc, dec).logits; });
    });
}

}  // namespace xtgrad::parity
