// Forward hooks on the four tutorials' models (nn/forward_hooks.hpp): a learner can hook any
// module and capture what it computes. Every module's forward is written in the hook form, so a
// hook on every module of a model runs; tutorial B's encoder layers are captured with shapes.
#include "tests/test_util.hpp"

#include <xtgrad/nn/tutorial_a/tutorial_a.hpp>
#include <xtgrad/nn/tutorial_b/tutorial_b.hpp>
#include <xtgrad/nn/tutorial_c/tutorial_c.hpp>
#include <xtgrad/nn/tutorial_d/tutorial_d.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

using namespace xtgrad;

TEST_SUITE_BEGIN("debug");

namespace {

// A forward hook on every module of a tree (ModuleLists, which have no forward, left out),
// counting the calls by path.
class HookEveryModule {
public:
    explicit HookEveryModule(nn::Module& root) { add(root); }

    // The modules whose hook never ran.
    // The paths of the modules whose hooks never ran, comma-separated (so a failure names them).
    std::string silent() const {
        std::string out;
        for (const auto& [path, n] : calls_)
            if (n == 0) out += (out.empty() ? "" : ", ") + path;
        return out;
    }
    std::size_t hooked() const { return calls_.size(); }

private:
    void add(nn::Module& m) {
        if (m.type_name().find("ModuleList") == std::string::npos) {
            const std::string key = m.path().empty() ? "<root>" : m.path();
            calls_.emplace(key, 0);
            handles_.push_back(m.register_forward_hook(
                [this, key](const nn::Module&, const std::vector<Tensor>&, const std::vector<Tensor>&) { ++calls_[key]; }));
        }
        for (const auto& [name, child] : m.named_children()) add(*child);
    }
    std::map<std::string, int> calls_;
    std::vector<nn::HookHandle> handles_;
};

}  // namespace

TEST_CASE("tutorial B: forward hooks capture each encoder layer's output, in order, with its shape") {
    manual_seed(0);
    nn::tutorial_b::Transformer model(10, 9, 16, 2, /*num_layers=*/3, 32, 8, 0.f);
    std::vector<std::pair<std::string, Shape>> seen;
    std::vector<std::size_t> inputs_seen;
    std::vector<nn::HookHandle> handles;
    for (const auto& layer : *model.encoder_layers)
        handles.push_back(layer->register_forward_hook(
            [&](const nn::Module& m, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) {
                seen.emplace_back(m.path(), outputs.at(0).shape());
                inputs_seen.push_back(inputs.size());  // x; the mask is not a tensor
            }));
    const Ids src{{1, 2, 3, 4, 0}, {5, 6, 0, 0, 0}}, tgt{{1, 2, 3}, {4, 5, 6}};
    const Tensor logits = model.forward(src, tgt);
    CHECK(logits.shape() == Shape{2, 3, 9});
    REQUIRE(seen.size() == 3);
    for (std::size_t i = 0; i < 3; ++i) {
        CHECK(seen[i].first == "encoder_layers." + std::to_string(i));
        CHECK(seen[i].second == Shape{2, 5, 16});
        CHECK(inputs_seen[i] == 1);
    }
    // The self-attention inside a layer: forward(Q, K, V, mask) calls no other hooked forward of
    // its own, so its hook runs once per layer, with Q, K and V.
    int attention_calls = 0;
    auto h = model.encoder_layers->operator[](0).self_attn->register_forward_hook(
        [&](const nn::Module&, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) {
            ++attention_calls;
            CHECK(inputs.size() == 3);
            CHECK(outputs.at(0).shape() == Shape{2, 5, 16});
        });
    model.forward(src, tgt);
    CHECK(attention_calls == 1);
}

TEST_CASE("tutorial A: a hook on every module runs") {
    manual_seed(0);
    nn::tutorial_a::Transformer model(6, 7, 5, 6, 1, 8, 2, 12, 0.f);
    HookEveryModule hooks(model);
    const Ids src{{3, 1, 5, 2, 4}, {2, 6, 0, 0, 0}}, tgt{{1, 4, 2, 3}, {5, 2, 1, 0}};
    model.forward(src, Ids{5, 2}, tgt, Ids{4, 3});
    CHECK(hooks.hooked() > 10);
    CHECK(hooks.silent() == "");
}

TEST_CASE("tutorial B: a hook on every module runs") {
    manual_seed(0);
    nn::tutorial_b::Transformer model(10, 9, 16, 2, 2, 32, 8, 0.1f);
    HookEveryModule hooks(model);
    model.forward(Ids{{1, 2, 3, 0}}, Ids{{4, 5, 6}});
    CHECK(hooks.hooked() > 10);
    CHECK(hooks.silent() == "");
}

TEST_CASE("tutorial C: a hook on every module runs") {
    manual_seed(0);
    nn::tutorial_c::Transformer model(
        nn::tutorial_c::Config().d_model(16).d_ff(32).d_k(4).d_v(4).n_layers(2).n_heads(2));
    HookEveryModule hooks(model);
    model.forward(Ids{{1, 2, 3, 4, 5, 6, 7}}, Ids{{7, 1, 2, 3, 4, 5, 6}});
    CHECK(hooks.hooked() > 10);
    CHECK(hooks.silent() == "");
}

TEST_CASE("tutorial D: a hook on every module runs, except out_proj's, as in torch") {
    manual_seed(0);
    nn::tutorial_d::Transformer model(
        nn::tutorial_d::TransformerOptions(16, 2).num_encoder_layers(2).num_decoder_layers(2).dim_feedforward(32).dropout(0.f));
    HookEveryModule hooks(model);
    model.forward(Tensor::zeros({5, 2, 16}), Tensor::zeros({4, 2, 16}));
    CHECK(hooks.hooked() > 10);
    // MultiheadAttention hands out_proj's weight and bias to multi_head_attention_forward (torch's
    // F.multi_head_attention_forward does the same): out_proj.forward never runs, so its hooks
    // stay silent in torch too.
    CHECK(hooks.silent() ==
          "decoder.layers.0.multihead_attn.out_proj, decoder.layers.0.self_attn.out_proj, "
          "decoder.layers.1.multihead_attn.out_proj, decoder.layers.1.self_attn.out_proj, "
          "encoder.layers.0.self_attn.out_proj, encoder.layers.1.self_attn.out_proj");
}

TEST_SUITE_END();
