// Tutorial D: Transformer with a custom encoder and decoder of the user's own classes (torch's
// custom_encoder / custom_decoder take any module): registered under encoder. / decoder., trained,
// re-initialised with the rest, gradchecked. Parity with torch.nn.Transformer(custom_encoder=...)
// on the same module: the transformer_d__custom_encoder fixture (tests/parity_test.cpp).
#include "tests/nn/tutorial_d_util.hpp"

#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/nn/layers.hpp>
#include <xtgrad/optim/optimizer.hpp>

#include <cmath>

TEST_SUITE_BEGIN("tutorial_d");

using namespace xtgrad;
using namespace xtgrad::test::tutorial_d;
using test::expect_error;
using test::max_abs_diff;
using test::rnd;

namespace {

// The docs' custom encoder: memory = proj(src), the masks ignored (torch passes them all the same).
struct LinearEncoder : EncoderBase {
    explicit LinearEncoder(std::size_t d_model) {
        proj = register_module("proj", std::make_shared<nn::Linear>(d_model, d_model));
    }
    Tensor forward(const Tensor& src, const AttentionMask&, const AttentionMask&) const override {
        auto scope = enter(src);
        return scope.output(proj->forward(src));
    }
    std::shared_ptr<nn::Linear> proj;
};

// A custom decoder: one decoder layer, no stack and no final norm.
struct OneLayerDecoder : DecoderBase {
    explicit OneLayerDecoder(const TransformerDecoderLayerOptions& o) {
        layer = register_module("layer", std::make_shared<TransformerDecoderLayer>(o));
    }
    Tensor forward(const Tensor& tgt, const Tensor& memory, const AttentionMask& tgt_mask, const AttentionMask& memory_mask,
                   const AttentionMask& tgt_key_padding_mask, const AttentionMask& memory_key_padding_mask) const override {
        return layer->forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask);
    }
    std::shared_ptr<TransformerDecoderLayer> layer;
};

}  // namespace

TEST_CASE("tutorial D: a module of your own as custom_encoder is registered under encoder. and re-initialised") {
    auto encoder = std::make_shared<LinearEncoder>(8);
    Transformer model(small_transformer(1, 1).custom_encoder(encoder).activation(Activation::gelu));
    CHECK(model.encoder == encoder);
    const std::vector<std::string> names = names_of(model);
    REQUIRE(names.size() > 2);
    CHECK(names[0] == "encoder.proj.weight");  // torch.nn.Transformer(custom_encoder=...)'s names
    CHECK(names[1] == "encoder.proj.bias");
    CHECK(names[2] == "decoder.layers.0.self_attn.in_proj_weight");
    // _reset_parameters: xavier_uniform_ on every matrix, bound sqrt(6 / (8 + 8)); biases as built
    CHECK(xt::amax(xt::abs(encoder->proj->weight.data()))() <= std::sqrt(6.f / 16.f));
    CHECK(&model.encoder_as<LinearEncoder>() == encoder.get());
    expect_error([&] { model.encoder_as(); }, {"Transformer: the encoder is a", "LinearEncoder",
                                               "custom_encoder", "not a xtgrad::nn::tutorial_d::TransformerEncoder"});
    bool in_state = false;
    for (const auto& [name, t] : model.state_dict()) in_state = in_state || name == "encoder.proj.bias";
    CHECK(in_state);
}

TEST_CASE("tutorial D: a Transformer with custom encoder and decoder passes gradcheck and trains them") {
    auto encoder = std::make_shared<LinearEncoder>(8);
    auto decoder = std::make_shared<OneLayerDecoder>(small_layer<TransformerDecoderLayerOptions>());
    Transformer model(small_transformer(1, 1).custom_encoder(encoder).custom_decoder(decoder));
    CHECK(names_of(model)[2] == "decoder.layer.self_attn.in_proj_weight");
    randomize(model, 51);
    const Tensor src = rnd({5, 2, 8}, 52), tgt = rnd({4, 2, 8}, 53);
    const Tensor causal = Transformer::generate_square_subsequent_mask(4);
    Mask pad = padding_mask(2, 5, 3);
    CHECK(model.forward(src, tgt, {}, causal, {}, pad, {}, pad).shape() == Shape{4, 2, 8});
    CHECK(gradcheck([&](const V& x) { return model.forward(x[0], x[1], {}, causal, {}, pad, {}, pad); },
                    with_parameters({src, tgt}, model)));

    // one SGD step moves the custom modules' parameters: they are the model's parameters
    const Array proj_before = encoder->proj->weight.data();
    const Array layer_before = decoder->layer->linear1->weight.data();
    optim::SGD sgd(model.parameters(), optim::SGDOptions(0.1));
    sgd.zero_grad();
    sum(model.forward(src, tgt, {}, causal) * rnd({4, 2, 8}, 54)).backward();
    sgd.step();
    CHECK(max_abs_diff(proj_before, encoder->proj->weight.data()) > 1e-4f);
    CHECK(max_abs_diff(layer_before, decoder->layer->linear1->weight.data()) > 1e-4f);

    // unbatched through the custom modules too
    CHECK(model.forward(rnd({5, 8}, 55), rnd({4, 8}, 56), {}, causal).shape() == Shape{4, 8});
}

TEST_SUITE_END();
