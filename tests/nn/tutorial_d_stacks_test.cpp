// Tutorial D (nn/tutorial_d, torch.nn's Transformer): TransformerEncoder, TransformerDecoder (deep copies of a layer,
// an optional norm) and Transformer (names, custom stacks, causality, bad input).
#include <xtgrad/nn/init.hpp>
#include "tests/nn/tutorial_d_util.hpp"

#include <xtensor/xmath.hpp>

#include <cmath>

TEST_SUITE_BEGIN("tutorial_d");

using namespace xtgrad;
using namespace xtgrad::test::tutorial_d;
using test::expect_error;
using test::rnd;

TEST_CASE("tutorial D: TransformerEncoder has independent layers and adds the encoding once, at the input") {
    const TransformerEncoderLayer layer(small_layer());
    TransformerEncoder with_pe(layer, 2, std::make_shared<nn::LayerNorm>(8), PositionalEncodingAt::encoder_input);
    CHECK(names_of(with_pe).size() == 2 * 12 + 2);
    CHECK(names_of(with_pe).front() == "layers.0.self_attn.in_proj_weight");
    CHECK(names_of(with_pe).back() == "norm.bias");
    // erratum: the tutorial applies one layer twice; here layers.0 and layers.1 are separate tensors,
    // deep copies of `layer`, which is not part of the encoder
    CHECK((*with_pe.layers)[0].linear1->weight.impl() != (*with_pe.layers)[1].linear1->weight.impl());
    // and, as torch.nn's deep copies of one layer, they start from equal values (docs/random.md)
    CHECK(test::max_abs_diff((*with_pe.layers)[0].linear1->weight.data(), (*with_pe.layers)[1].linear1->weight.data()) == 0.f);

    // erratum: once at the input = torch's encoder (pe none, same weights) applied to src + P
    TransformerEncoder without_pe(layer, 2, std::make_shared<nn::LayerNorm>(8), PositionalEncodingAt::none);
    without_pe.load_state_dict(with_pe.state_dict());
    Tensor src = rnd({5, 2, 8}, 24);
    const Tensor a = with_pe.forward(src), b = without_pe.forward(positional_encoding(src, 8, 0.f, 512, /*seq_axis=*/0));
    CHECK(test::max_abs_diff(a.data(), b.data()) == 0.f);
    CHECK(test::max_abs_diff(a.data(), without_pe.forward(src).data()) > 1e-3f);

    randomize(with_pe, 7);
    const Mask pad = padding_mask(2, 5, 4);
    CHECK(gradcheck([&](const V& x) { return with_pe.forward(x[0], {}, pad); }, with_parameters({src}, with_pe)));
}

TEST_CASE("tutorial D: TransformerDecoder stacks independent layers and passes gradcheck") {
    const TransformerDecoderLayer layer(small_layer<TransformerDecoderLayerOptions>());
    TransformerDecoder decoder(layer, 2, std::make_shared<nn::LayerNorm>(8));
    CHECK(names_of(decoder).size() == 2 * 18 + 2);
    CHECK(names_of(decoder)[18] == "layers.1.self_attn.in_proj_weight");
    randomize(decoder, 8);
    Tensor tgt = rnd({4, 2, 8}, 25), memory = rnd({5, 2, 8}, 26);
    const Tensor causal = Transformer::generate_square_subsequent_mask(4);
    const Mask mem_pad = padding_mask(2, 5, 3);
    CHECK(gradcheck([&](const V& x) { return decoder.forward(x[0], x[1], causal, {}, {}, mem_pad); },
                    with_parameters({tgt, memory}, decoder), test::model_gradcheck()));
}

TEST_CASE("tutorial D: Transformer has exactly torch.nn.Transformer's parameter names") {
    Transformer model(TransformerOptions(8, 2, 2, 1).dim_feedforward(12));
    const std::vector<std::string> enc_layer{
        "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight", "self_attn.out_proj.bias",
        "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
        "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"};
    const std::vector<std::string> dec_layer{
        "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight", "self_attn.out_proj.bias",
        "multihead_attn.in_proj_weight", "multihead_attn.in_proj_bias", "multihead_attn.out_proj.weight",
        "multihead_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
        "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias", "norm3.weight", "norm3.bias"};
    std::vector<std::string> expected;
    for (int i = 0; i < 2; ++i)
        for (const std::string& n : enc_layer) expected.push_back("encoder.layers." + std::to_string(i) + "." + n);
    expected.insert(expected.end(), {"encoder.norm.weight", "encoder.norm.bias"});  // erratum: the encoder norm is passed
    for (const std::string& n : dec_layer) expected.push_back("decoder.layers.0." + n);
    expected.insert(expected.end(), {"decoder.norm.weight", "decoder.norm.bias"});
    CHECK(names_of(model) == expected);
    CHECK(model.named_buffers().empty());
    // every matrix re-initialised with xavier_uniform_: linear1 (12, 8) has bound sqrt(6 / 20)
    CHECK(xt::amax(xt::abs((*model.encoder_as().layers)[0].linear1->weight.data()))() <= std::sqrt(6.f / 20.f));
}

TEST_CASE("tutorial D: Transformer passes gradcheck and its tgt_mask makes the decoder causal") {
    for (bool batch_first : {false, true}) {
        CAPTURE(batch_first);
        Transformer model(small_transformer().activation(Activation::gelu).batch_first(batch_first));
        randomize(model, 9);
        Tensor src = batch_first ? rnd({2, 5, 8}, 27) : rnd({5, 2, 8}, 27);
        Tensor tgt = batch_first ? rnd({2, 4, 8}, 28) : rnd({4, 2, 8}, 28);
        const Tensor causal = Transformer::generate_square_subsequent_mask(4);
        const Mask src_pad = padding_mask(2, 5, 3), tgt_pad = padding_mask(2, 4, 3);
        const auto f = [&](const V& x) { return model.forward(x[0], x[1], {}, causal, {}, src_pad, tgt_pad, src_pad); };
        CHECK(gradcheck(f, with_parameters({src, tgt}, model), test::model_gradcheck()));

        // changing the last target position leaves the outputs of the earlier ones unchanged
        Tensor tgt2 = Tensor(tgt.data());
        const int seq_axis = batch_first ? 1 : 0;
        for (std::size_t n = 0; n < 2; ++n)
            for (std::size_t e = 0; e < 8; ++e) (batch_first ? tgt2.mutable_data()(n, 3, e) : tgt2.mutable_data()(3, n, e)) += 5.f;
        const Tensor a = narrow(model.forward(src, tgt, {}, causal), seq_axis, 0, 3);
        const Tensor b = narrow(model.forward(src, tgt2, {}, causal), seq_axis, 0, 3);
        CHECK(test::max_abs_diff(a.data(), b.data()) < 1e-5f);
    }
}

TEST_CASE("tutorial D: Transformer checks src and tgt like torch and names the failing module") {
    Transformer model(TransformerOptions(8, 2, 1, 1).dim_feedforward(12));
    expect_error([&] { model.forward(rnd({5, 2, 8}), rnd({4, 3, 8})); },
                {"Transformer", "the batch number of src and tgt must be equal", "(5,2,8)", "(4,3,8)"});
    expect_error([&] { model.forward(rnd({5, 2, 8}), rnd({4, 2, 6})); },
                {"the feature number of src and tgt must be equal to d_model 8"});
    expect_error([&] { model.forward(rnd({5, 2, 8}), rnd({4, 2, 8}), Tensor::zeros({4, 4})); },
                {"MultiheadAttention 'encoder.layers.0.self_attn'", "2D attn_mask is (4,4), but should be (5,5)"});
    expect_error([&] { model.forward(rnd({5, 2, 8}), rnd({4, 2, 8}), {}, {}, {}, {}, {}, Mask(xt::zeros<bool>({2, 4}))); },
                {"MultiheadAttention 'decoder.layers.0.multihead_attn'", "key_padding_mask shape of (2,5)"});
    expect_error([] { (void)Transformer(TransformerOptions(10, 4)); }, {"embed_dim must be divisible by num_heads"});
    expect_error([&] { model.forward(rnd({600, 1, 8}), rnd({4, 1, 8})); },
                {"TransformerEncoder 'encoder'", "(600,1,8) has 600 positions", "max_len 512"});
}

TEST_CASE("tutorial D: TransformerEncoder/Decoder clone the given layer as torch's _get_clones (deepcopy)") {
    manual_seed(4);
    TransformerEncoderLayer layer(small_layer());
    randomize(layer, 40);
    layer.eval();
    const Generator before = default_generator();
    TransformerEncoder encoder(layer, 3, nullptr, PositionalEncodingAt::none);
    // deepcopy draws nothing: the generator is where the layer left it
    CHECK(default_generator().random() == Generator(before).random());
    for (std::size_t i = 0; i < 3; ++i) {
        CAPTURE(i);
        const auto& clone = (*encoder.layers)[i];
        CHECK(!clone.is_training());  // the layer's mode is copied too
        CHECK(clone.linear2->bias.impl() != layer.linear2->bias.impl());
        CHECK(test::max_abs_diff(clone.self_attn->in_proj_weight.data(), layer.self_attn->in_proj_weight.data()) == 0.f);
        CHECK(test::max_abs_diff(clone.norm1->bias.data(), layer.norm1->bias.data()) == 0.f);
    }
    // the clones are independent: changing one leaves the others and the prototype
    (*encoder.layers)[1].linear1->weight.mutable_data().fill(0.f);
    CHECK(xt::amax(xt::abs((*encoder.layers)[0].linear1->weight.data()))() > 0.f);
    CHECK(xt::amax(xt::abs(layer.linear1->weight.data()))() > 0.f);
    CHECK(!encoder.norm);
    CHECK(names_of(encoder).back() == "layers.2.norm2.bias");

    // the options form, with a norm registered as given (not copied), as torch's norm=
    auto norm = std::make_shared<nn::LayerNorm>(8);
    const auto prototype = std::make_shared<const TransformerDecoderLayer>(small_layer<TransformerDecoderLayerOptions>());
    TransformerDecoder decoder(TransformerDecoderOptions(prototype, 2).norm(norm));
    CHECK(decoder.norm == norm);
    CHECK(test::max_abs_diff((*decoder.layers)[1].multihead_attn->in_proj_weight.data(),
                             prototype->multihead_attn->in_proj_weight.data()) == 0.f);
    expect_error([] { (void)TransformerEncoder(TransformerEncoderOptions(nullptr, 2)); }, {"TransformerEncoder", "null"});
}

TEST_CASE("tutorial D: Transformer draws as torch.nn.Transformer: layer, norm, clones, then xavier for every matrix") {
    // the same draws by hand: encoder layer, encoder clones, decoder layer, decoder clones, xavier_uniform_
    manual_seed(9);
    Transformer model(small_transformer(2, 2));
    manual_seed(9);
    const TransformerEncoderLayer enc_layer(small_transformer().encoder_layer());
    TransformerEncoder encoder(enc_layer, 2, std::make_shared<nn::LayerNorm>(8));
    const TransformerDecoderLayer dec_layer(small_transformer().decoder_layer());
    TransformerDecoder decoder(dec_layer, 2, std::make_shared<nn::LayerNorm>(8));
    for (nn::Module* m : std::initializer_list<nn::Module*>{&encoder, &decoder})
        for (Tensor& p : m->parameters())
            if (p.dim() > 1) nn::init::xavier_uniform_(p);
    const nn::NamedTensors mine = model.state_dict();
    nn::NamedTensors by_hand;
    for (const auto& [name, t] : encoder.state_dict()) by_hand.emplace_back("encoder." + name, t);
    for (const auto& [name, t] : decoder.state_dict()) by_hand.emplace_back("decoder." + name, t);
    REQUIRE(mine.size() == by_hand.size());
    for (std::size_t i = 0; i < mine.size(); ++i) {
        CAPTURE(mine[i].first);
        CHECK(mine[i].first == by_hand[i].first);
        CHECK(test::max_abs_diff(mine[i].second.data(), by_hand[i].second.data()) == 0.f);
    }
}

TEST_CASE("tutorial D: Transformer takes a custom encoder and decoder, re-initialised with the rest, as torch") {
    // a custom encoder: 3 gelu layers without positional encoding and without a final norm
    const TransformerEncoderLayer layer(small_layer());
    auto custom_encoder = std::make_shared<TransformerEncoder>(layer, 3, nullptr, PositionalEncodingAt::none);
    const Tensor before = Tensor(custom_encoder->layers->operator[](0).linear1->weight.data());
    Transformer model(small_transformer(1, 1).custom_encoder(custom_encoder).activation(Activation::gelu));
    CHECK(model.encoder == custom_encoder);
    CHECK(model.encoder_as().layers->size() == 3);
    CHECK(model.decoder_as().layers->size() == 1);
    CHECK(names_of(model).front() == "encoder.layers.0.self_attn.in_proj_weight");
    CHECK(names_of(model)[3 * 12] == "decoder.layers.0.self_attn.in_proj_weight");  // no encoder.norm
    // _reset_parameters re-draws every matrix, the custom encoder's too
    CHECK(test::max_abs_diff(before.data(), (*model.encoder_as().layers)[0].linear1->weight.data()) > 0.f);
    randomize(model, 41);
    Tensor src = rnd({5, 2, 8}, 42), tgt = rnd({4, 2, 8}, 43);
    const Tensor causal = Transformer::generate_square_subsequent_mask(4);
    CHECK(model.forward(src, tgt, {}, causal).shape() == Shape{4, 2, 8});
    CHECK(gradcheck([&](const V& x) { return model.forward(x[0], x[1], {}, causal); }, with_parameters({src, tgt}, model),
                    test::model_gradcheck()));

    // a custom decoder with a final norm of another eps
    const TransformerDecoderLayer dec_layer(small_layer<TransformerDecoderLayerOptions>());
    auto custom_decoder = std::make_shared<TransformerDecoder>(dec_layer, 2, std::make_shared<nn::LayerNorm>(8, 1e-3f));
    Transformer with_decoder(small_transformer(1, 1).custom_decoder(custom_decoder));
    CHECK(with_decoder.decoder_as().layers->size() == 2);
    CHECK(with_decoder.decoder_as().norm->eps == 1e-3f);
}

TEST_SUITE_END();
