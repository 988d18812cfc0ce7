// Tutorial D (nn/tutorial_d, torch.nn's Transformer): TransformerEncoderLayer and TransformerDecoderLayer: names,
// gradchecks, post- and pre-norm, the activation as a callable, bad input.
#include "tests/nn/tutorial_d_util.hpp"

#include <cmath>

TEST_SUITE_BEGIN("tutorial_d");

using namespace xtgrad;
using namespace xtgrad::test::tutorial_d;
using test::expect_error;
using test::rnd;

TEST_CASE("tutorial D: TransformerEncoderLayer and TransformerDecoderLayer have torch's names") {
    TransformerEncoderLayer enc(small_layer());
    CHECK(names_of(enc) == std::vector<std::string>{
                               "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
                               "self_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight",
                               "linear2.bias", "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"});
    TransformerDecoderLayer dec(small_layer<TransformerDecoderLayerOptions>());
    CHECK(names_of(dec) == std::vector<std::string>{
                               "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
                               "self_attn.out_proj.bias", "multihead_attn.in_proj_weight",
                               "multihead_attn.in_proj_bias", "multihead_attn.out_proj.weight",
                               "multihead_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight",
                               "linear2.bias", "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias",
                               "norm3.weight", "norm3.bias"});
}

TEST_CASE("tutorial D: TransformerEncoderLayer passes gradcheck, post-norm and pre-norm") {
    const Mask pad = padding_mask(2, 5, 3);
    const Tensor causal = Transformer::generate_square_subsequent_mask(5);
    for (bool norm_first : {false, true}) {
        CAPTURE(norm_first);
        TransformerEncoderLayer layer(small_layer(false, norm_first));
        randomize(layer, 5);
        Tensor src = rnd({5, 2, 8}, 20);
        const auto f = [&](const V& x) { return layer.forward(x[0], causal, pad); };
        CHECK(gradcheck(f, with_parameters({src}, layer)));
    }
}

TEST_CASE("tutorial D: post-norm normalises the layer output, pre-norm leaves the residual stream") {
    TransformerEncoderLayer post(small_layer(false, false)), pre(small_layer(false, true));
    Tensor src = rnd({5, 2, 8}, 21, 3.f);
    const Tensor a = post.forward(src), b = pre.forward(src);
    // post-norm ends in norm2 (weight 1, bias 0 at init): every row has mean 0
    CHECK(std::abs(mean(narrow(narrow(a, 0, 1, 1), 1, 0, 1)).item()) < 1e-5f);
    CHECK(std::abs(mean(narrow(narrow(b, 0, 1, 1), 1, 0, 1)).item()) > 1e-3f);
}

TEST_CASE("tutorial D: TransformerDecoderLayer passes gradcheck, sequence- and batch-first") {
    const Mask tgt_pad = padding_mask(2, 4, 3), mem_pad = padding_mask(2, 5, 2);
    const Tensor causal = Transformer::generate_square_subsequent_mask(4);
    for (bool batch_first : {false, true}) {
        CAPTURE(batch_first);
        TransformerDecoderLayer layer(small_layer<TransformerDecoderLayerOptions>(batch_first));
        randomize(layer, 6);
        Tensor tgt = batch_first ? rnd({2, 4, 8}, 22) : rnd({4, 2, 8}, 22);
        Tensor memory = batch_first ? rnd({2, 5, 8}, 23) : rnd({5, 2, 8}, 23);
        const auto f = [&](const V& x) { return layer.forward(x[0], x[1], causal, {}, tgt_pad, mem_pad); };
        CHECK(gradcheck(f, with_parameters({tgt, memory}, layer), test::model_gradcheck()));
    }
}

TEST_CASE("tutorial D: the layers name themselves and the shapes on bad input") {
    TransformerEncoderLayer enc(small_layer());
    expect_error([&] { enc.forward(rnd({5, 2, 6})); }, {"TransformerEncoderLayer", "src", "d_model = 8", "(5,2,6)"});
    TransformerDecoderLayer dec(small_layer<TransformerDecoderLayerOptions>());
    expect_error([&] { dec.forward(rnd({4, 2, 8}), rnd({5, 8})); }, {"TransformerDecoderLayer", "memory", "(5,8)"});
    expect_error([] { activation_from_string("tanh"); }, {"relu/gelu", "tanh"});
}

TEST_CASE("tutorial D: the activation is a callable: relu, gelu, their names, or a function of your own") {
    Tensor x = rnd({5, 2, 8}, 30);
    TransformerEncoderLayer with_relu(small_layer().activation(Activation::relu));
    TransformerEncoderLayer by_name(small_layer().activation("relu"));
    by_name.load_state_dict(with_relu.state_dict());
    CHECK(test::max_abs_diff(with_relu.forward(x).data(), by_name.forward(x).data()) == 0.f);
    CHECK(std::string(to_string(by_name.options.activation())) == "relu");

    // a user function, as torch accepts activation=callable: here a lambda around relu
    TransformerEncoderLayer custom(small_layer().activation([](const Tensor& t) { return xtgrad::relu(t); }));
    custom.load_state_dict(with_relu.state_dict());
    CHECK(custom.options.activation().name() == "custom");
    CHECK(test::max_abs_diff(custom.forward(x).data(), with_relu.forward(x).data()) == 0.f);

    // a plain function works too (tanh), and gradcheck goes through it
    TransformerDecoderLayer tanh_layer(small_layer<TransformerDecoderLayerOptions>().activation(xtgrad::tanh));
    randomize(tanh_layer, 31);
    Tensor memory = rnd({4, 2, 8}, 32);
    CHECK(gradcheck([&](const V& a) { return tanh_layer.forward(a[0], a[1]); }, with_parameters({x, memory}, tanh_layer)));
    expect_error([] { TransformerEncoderLayerOptions(8, 2).activation("swish"); }, {"relu/gelu", "swish"});
}

TEST_CASE("tutorial D: layer options: required d_model and nhead, the tutorial's defaults, torch's positional form") {
    const TransformerEncoderLayerOptions o(512, 8);
    CHECK(o.dim_feedforward() == 2048);
    CHECK(o.dropout() == 0.1f);
    CHECK(o.activation().name() == "relu");
    CHECK(o.layer_norm_eps() == 1e-5f);
    CHECK(!o.batch_first());
    CHECK(!o.norm_first());
    // TransformerEncoderLayer(8, 2, 12, 0.f, gelu) as torch's positional arguments = the options form
    manual_seed(3);
    TransformerEncoderLayer positional(8, 2, 12, 0.f, Activation::gelu);
    manual_seed(3);
    TransformerEncoderLayer with_options(small_layer());
    CHECK(test::max_abs_diff(positional.linear1->weight.data(), with_options.linear1->weight.data()) == 0.f);
    Tensor x = rnd({3, 2, 8}, 33);
    CHECK(test::max_abs_diff(positional.forward(x).data(), with_options.forward(x).data()) == 0.f);
}

TEST_SUITE_END();

TEST_CASE("tutorial D: generate_square_subsequent_mask of a size whose square overflows is an Error") {
    test::expect_error([] { (void)Transformer::generate_square_subsequent_mask(std::size_t{1} << 32); },
                       {"generate_square_subsequent_mask(4294967296)", "too large"});
    CHECK(Transformer::generate_square_subsequent_mask(0).numel() == 0);
}
