// Tutorial D modules (nn/tutorial_d, torch.nn's Transformer): gradchecks, torch's state
// names, the mask conventions, the errata fixes and bad input. Parity with PyTorch runs in
// tests/parity_test.cpp.
#include "nn/tutorial_d/tutorial_d.hpp"
#include "tests/test_util.hpp"

#include <xtensor/xmath.hpp>

#include <cmath>
#include <limits>

using namespace xtgrad;
using namespace xtgrad::nn::tutorial_d;
using test::expect_error;
using test::rnd;
using V = std::vector<Tensor>;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Small sizes: E 8, 2 heads, ff 12. gelu keeps the functions smooth for finite differences
// (relu's kink is covered by the parity fixtures).
TransformerLayerOptions small_layer(bool batch_first = false, bool norm_first = false) {
    return {.d_model = 8, .nhead = 2, .dim_feedforward = 12, .dropout = 0.f, .activation = Activation::gelu,
            .layer_norm_eps = 1e-5f, .batch_first = batch_first, .norm_first = norm_first};
}

std::vector<std::string> names_of(const nn::Module& m) {
    std::vector<std::string> out;
    for (const auto& [name, t] : m.named_parameters()) out.push_back(name);
    return out;
}

// The inputs followed by every parameter of m, so gradcheck perturbs both.
V with_parameters(V inputs, const nn::Module& m) {
    for (const Tensor& p : m.parameters()) inputs.push_back(p);
    return inputs;
}

// Biases and LayerNorm weights start constant; random values make every term matter.
void randomize(nn::Module& m, std::uint64_t seed) {
    Generator g(seed);
    for (Tensor& p : m.parameters())
        for (float& v : p.data()) v += 0.1f * g.normal();
}

Mask padding_mask(std::size_t N, std::size_t L, std::size_t real_len_of_row0) {
    Mask m = xt::zeros<bool>({N, L});
    for (std::size_t j = real_len_of_row0; j < L; ++j) m(0, j) = true;  // row 0 padded, the others full
    return m;
}

}  // namespace

// ---------------------------------------------------------------- positional encoding

TEST_CASE("tutorial D: the tutorial's examples give the shapes it prints") {
    Generator g(7);
    // 位置编码: torch.Size([2, 4, 10])
    CHECK(positional_encoding(randn({2, 4, 10}, g), 10).shape() == Shape{2, 4, 10});
    // 多头注意力: src (2, 4, 100) -> torch.Size([2, 4, 100]) torch.Size([4, 2, 2])
    MultiheadAttention multihead_attn(100, 4, 0.1f);
    const Tensor src = randn({2, 4, 100}, g);
    const auto [attn_output, attn_output_weights] = multihead_attn.forward(src, src, src);
    CHECK(attn_output.shape() == Shape{2, 4, 100});
    CHECK(attn_output_weights.shape() == Shape{4, 2, 2});
    // Decoder Layer: tgt (20, 32, 512), memory (10, 32, 512) -> torch.Size([20, 32, 512])
    TransformerDecoderLayer decoder_layer({.d_model = 512, .nhead = 8});
    CHECK(decoder_layer.forward(rand({20, 32, 512}, g), rand({10, 32, 512}, g)).shape() == Shape{20, 32, 512});
}


TEST_CASE("tutorial D: positional_encoding adds the float32 sinusoid table along the sequence axis") {
    const Tensor P = positional_table(6, 10);
    for (std::size_t pos = 0; pos < 6; ++pos)
        for (std::size_t i = 0; i < 5; ++i) {
            const double angle = pos / std::pow(10000.0, 2.0 * i / 10.0);
            CHECK(P.data()(pos, 2 * i) == doctest::Approx(std::sin(angle)).epsilon(1e-6));
            CHECK(P.data()(pos, 2 * i + 1) == doctest::Approx(std::cos(angle)).epsilon(1e-6));
        }
    // batch-first (the tutorial's documented layout) and sequence-first give the same encoding
    Tensor x = rnd({3, 6, 10}, 1);  // (N, L, E)
    const Tensor batch_first = positional_encoding(x, 10);
    const Tensor seq_first = positional_encoding(transpose(x, 0, 1), 10, 512, /*seq_axis=*/0);
    CHECK(test::max_abs_diff(transpose(seq_first, 0, 1).data(), batch_first.data()) == 0.f);
    CHECK(batch_first.data()(2, 4, 1) == doctest::Approx(x.data()(2, 4, 1) + P.data()(4, 1)));
    CHECK(gradcheck([](const V& v) { return positional_encoding(v[0], 10, 6, 1); }, {x}));
}

TEST_CASE("tutorial D: positional_encoding rejects odd features, long sequences and a wrong width") {
    expect_error([] { positional_encoding(rnd({2, 4, 9}), 9); }, {"positional_encoding", "even", "9"});
    expect_error([] { positional_encoding(rnd({2, 20, 8}), 8, 16); }, {"sequence length 20", "max_len 16"});
    expect_error([] { positional_encoding(rnd({2, 4, 8}), 10); }, {"(2,4,8)", "num_features 10"});
    expect_error([] { positional_encoding(rnd({4, 8}), 8); }, {"3-D", "(4,8)"});
}

// ---------------------------------------------------------------- scaled dot-product attention

TEST_CASE("tutorial D: scaled_dot_product_attention scales q by 1/sqrt(E), adds float masks and passes gradcheck") {
    Tensor q = rnd({4, 3, 5}, 2), k = rnd({4, 6, 5}, 3), v = rnd({4, 6, 5}, 4);
    Array bias = xt::zeros<float>({4, 3, 6});
    bias(0, 0, 5) = -kInf;  // masked
    bias(1, 2, 0) = 0.7f;   // a finite bias
    const Tensor additive(bias);
    const nn::AttentionResult r = scaled_dot_product_attention(q, k, v, additive);
    CHECK(r.context.shape() == Shape{4, 3, 5});
    CHECK(r.weights.data()(0, 0, 5) == 0.f);
    // by hand for one score row: softmax(q·k / sqrt(5) + bias)
    double scores[6], total = 0;
    for (std::size_t j = 0; j < 6; ++j) {
        double s = 0;
        for (std::size_t e = 0; e < 5; ++e) s += q.data()(1, 2, e) * k.data()(1, j, e);
        scores[j] = std::exp(s / std::sqrt(5.0) + bias(1, 2, j));
        total += scores[j];
    }
    for (std::size_t j = 0; j < 6; ++j) CHECK(r.weights.data()(1, 2, j) == doctest::Approx(scores[j] / total).epsilon(1e-5));
    CHECK(gradcheck([&](const V& x) { return scaled_dot_product_attention(x[0], x[1], x[2], additive).context; },
                    {q, k, v}));
    Mask causal = xt::zeros<bool>({3, 6});
    causal(0, 4) = causal(0, 5) = true;
    CHECK(gradcheck([&](const V& x) { return scaled_dot_product_attention(x[0], x[1], x[2], causal).context; },
                    {q, k, v}));
}

// ---------------------------------------------------------------- MultiheadAttention

TEST_CASE("tutorial D: MultiheadAttention has torch's parameter names and shapes") {
    MultiheadAttention packed(8, 2);
    CHECK(names_of(packed) == std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"});
    CHECK(packed.in_proj_weight.shape() == Shape{24, 8});
    CHECK(packed.in_proj_bias.shape() == Shape{24});
    // torch's initialisation: zero biases, xavier_uniform_ bound sqrt(6 / (8 + 24)) on the packed matrix
    CHECK(xt::amax(xt::abs(packed.in_proj_bias.data()))() == 0.f);
    CHECK(xt::amax(xt::abs(packed.out_proj->bias.data()))() == 0.f);
    CHECK(xt::amax(xt::abs(packed.in_proj_weight.data()))() <= std::sqrt(6.f / 32.f));

    MultiheadAttention separate(8, 2, 0.f, true, /*kdim=*/5, /*vdim=*/7);
    CHECK(names_of(separate) == std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight",
                                                         "in_proj_bias", "out_proj.weight", "out_proj.bias"});
    CHECK(separate.k_proj_weight.shape() == Shape{8, 5});
    CHECK(separate.v_proj_weight.shape() == Shape{8, 7});
    CHECK(!separate.in_proj_weight.defined());

    MultiheadAttention no_bias(8, 2, 0.f, /*bias=*/false);
    CHECK(names_of(no_bias) == std::vector<std::string>{"in_proj_weight", "out_proj.weight"});
}

TEST_CASE("tutorial D: MultiheadAttention passes gradcheck in every configuration") {
    const Mask pad = padding_mask(2, 5, 3);
    SUBCASE("packed, sequence-first, key padding") {
        MultiheadAttention m(8, 2);
        randomize(m, 1);
        Tensor q = rnd({4, 2, 8}, 5), k = rnd({5, 2, 8}, 6), v = rnd({5, 2, 8}, 7);
        const auto f = [&](const V& x) { return m.forward(x[0], x[1], x[2], pad).attn_output; };
        CHECK(gradcheck(f, with_parameters({q, k, v}, m)));
    }
    SUBCASE("self-attention: one tensor as query, key and value") {
        MultiheadAttention m(8, 2);
        randomize(m, 2);
        Tensor x = rnd({5, 2, 8}, 8);
        CHECK(gradcheck([&](const V& in) { return m.forward(in[0], in[0], in[0], pad).attn_output; },
                        with_parameters({x}, m)));
    }
    SUBCASE("batch_first, kdim/vdim, additive 3-D mask") {
        MultiheadAttention m(8, 2, 0.f, true, 5, 7, /*batch_first=*/true);
        randomize(m, 3);
        Tensor q = rnd({2, 4, 8}, 9), k = rnd({2, 5, 5}, 10), v = rnd({2, 5, 7}, 11);
        Tensor bias = rnd({4, 4, 5}, 12);  // (N·h, Lq, Lk)
        bias.requires_grad_(false);
        const auto f = [&](const V& x) { return m.forward(x[0], x[1], x[2], {}, true, bias).attn_output; };
        CHECK(gradcheck(f, with_parameters({q, k, v}, m)));
    }
    SUBCASE("no bias, boolean 2-D mask") {
        MultiheadAttention m(8, 2, 0.f, false);
        Tensor q = rnd({4, 2, 8}, 13), k = rnd({5, 2, 8}, 14), v = rnd({5, 2, 8}, 15);
        Mask causal = xt::zeros<bool>({4, 5});
        for (std::size_t i = 0; i < 4; ++i)
            for (std::size_t j = i + 2; j < 5; ++j) causal(i, j) = true;
        const auto f = [&](const V& x) { return m.forward(x[0], x[1], x[2], {}, true, causal).attn_output; };
        CHECK(gradcheck(f, with_parameters({q, k, v}, m)));
    }
}

TEST_CASE("tutorial D: masks behave as documented: bool true = masked, float added, key padding per batch item") {
    MultiheadAttention m(8, 2);
    randomize(m, 4);
    const std::size_t L = 4, S = 5, N = 2;
    Tensor q = rnd({L, N, 8}, 16), k = rnd({S, N, 8}, 17), v = rnd({S, N, 8}, 18);
    const auto weights_per_head = [&](const AttentionMask& kpm, const AttentionMask& attn) {
        return m.forward(q, k, v, kpm, true, attn, /*average_attn_weights=*/false).attn_output_weights;  // (N, h, L, S)
    };

    SUBCASE("a boolean mask equals the float mask with -inf at its true entries") {
        Mask b = xt::zeros<bool>({L, S});
        b(0, 1) = b(2, 4) = b(3, 0) = true;
        Array f = xt::zeros<float>({L, S});
        f(0, 1) = f(2, 4) = f(3, 0) = -kInf;
        const auto with_bool = m.forward(q, k, v, {}, true, b);
        const auto with_float = m.forward(q, k, v, {}, true, Tensor(f));
        CHECK(test::max_abs_diff(with_bool.attn_output.data(), with_float.attn_output.data()) == 0.f);
        CHECK(with_bool.attn_output_weights.data()(1, 2, 4) == 0.f);  // (N, L, S): masked for every item
        CHECK(with_bool.attn_output_weights.data()(0, 0, 1) == 0.f);
    }
    SUBCASE("a float mask is added to the scores: a constant per row changes nothing") {
        Array shift = xt::zeros<float>({L, S});
        for (std::size_t i = 0; i < L; ++i)
            for (std::size_t j = 0; j < S; ++j) shift(i, j) = static_cast<float>(i) * 3.f;
        const Tensor plain = m.forward(q, k, v).attn_output;
        const Tensor shifted = m.forward(q, k, v, {}, true, Tensor(shift)).attn_output;
        CHECK(test::max_abs_diff(plain.data(), shifted.data()) < 1e-5f);
        Array bias = xt::zeros<float>({L, S});
        bias(1, 3) = 2.f;  // a finite bias raises that key's weight
        CHECK(m.forward(q, k, v, {}, true, Tensor(bias)).attn_output_weights.data()(0, 1, 3) >
              m.forward(q, k, v).attn_output_weights.data()(0, 1, 3));
    }
    SUBCASE("a 3-D mask has one (L, S) block per batch item and head, row n·h + head") {
        Mask b = xt::zeros<bool>({N * 2, L, S});
        b(1 * 2 + 1, 2, 3) = true;  // batch item 1, head 1, query 2, key 3
        const Tensor w = weights_per_head({}, b);
        CHECK(w.data()(1, 1, 2, 3) == 0.f);
        CHECK(w.data()(1, 0, 2, 3) > 0.f);  // the other head of the same item
        CHECK(w.data()(0, 1, 2, 3) > 0.f);  // the same head of the other item
    }
    SUBCASE("key_padding_mask hides keys of its batch item from every query and head") {
        const Mask pad = padding_mask(N, S, 3);  // item 0: keys 3 and 4 are padding
        const Tensor w = weights_per_head(pad, {});
        for (std::size_t h = 0; h < 2; ++h)
            for (std::size_t i = 0; i < L; ++i) {
                CHECK(w.data()(0, h, i, 3) == 0.f);
                CHECK(w.data()(0, h, i, 4) == 0.f);
                CHECK(w.data()(1, h, i, 4) > 0.f);
            }
        // the padded values do not reach the output
        Tensor v2 = Tensor(v.data());
        for (std::size_t e = 0; e < 8; ++e) v2.data()(4, 0, e) += 100.f;
        const Tensor a = m.forward(q, k, v, pad).attn_output, b = m.forward(q, k, v2, pad).attn_output;
        CHECK(test::max_abs_diff(a.data(), b.data()) < 1e-5f);
    }
    SUBCASE("key padding is OR-ed into a bool mask and written as -inf into a float one") {
        const Mask pad = padding_mask(N, S, 4);
        Mask b = xt::zeros<bool>({L, S});
        b(0, 0) = true;
        Array f = xt::zeros<float>({L, S});
        f(0, 0) = -kInf;
        const Tensor wb = weights_per_head(pad, b), wf = weights_per_head(pad, Tensor(f));
        CHECK(test::max_abs_diff(wb.data(), wf.data()) == 0.f);
        CHECK(wb.data()(0, 1, 0, 0) == 0.f);  // from attn_mask
        CHECK(wb.data()(0, 1, 2, 4) == 0.f);  // from key_padding_mask
        CHECK(wb.data()(1, 1, 2, 4) > 0.f);
        const AttentionMask merged = AttentionMask(b).merged_with(AttentionMask(pad).reshaped({N, 1, 1, S}));
        CHECK(merged.is_bool());
        CHECK(merged.shape() == Shape{N, 1, L, S});
        const AttentionMask merged_float = AttentionMask(Tensor(f)).merged_with(AttentionMask(pad).reshaped({N, 1, 1, S}));
        CHECK(!merged_float.is_bool());
        CHECK(merged_float.additive().data()(0, 0, 1, 4) == -kInf);
    }
    SUBCASE("the weights are averaged over heads unless asked otherwise") {
        const Tensor per_head = weights_per_head({}, {});
        const Tensor averaged = m.forward(q, k, v).attn_output_weights;
        CHECK(per_head.shape() == Shape{N, 2, L, S});
        CHECK(averaged.shape() == Shape{N, L, S});
        CHECK(averaged.data()(1, 2, 3) ==
              doctest::Approx((per_head.data()(1, 0, 2, 3) + per_head.data()(1, 1, 2, 3)) / 2));
        CHECK(!m.forward(q, k, v, {}, /*need_weights=*/false).attn_output_weights.defined());
    }
    SUBCASE("a query row with every key masked by -inf is an Error (torch gives NaN)") {
        Mask all = xt::zeros<bool>({L, S});
        for (std::size_t j = 0; j < S; ++j) all(1, j) = true;
        expect_error([&] { m.forward(q, k, v, {}, true, all); }, {"softmax", "entirely -inf"});
    }
}

TEST_CASE("tutorial D: MultiheadAttention applies dropout in training only") {
    MultiheadAttention m(8, 2, /*dropout=*/0.5f);
    Tensor x = rnd({4, 2, 8}, 19);
    m.eval();
    const Tensor a = m.forward(x, x, x).attn_output, b = m.forward(x, x, x).attn_output;
    CHECK(test::max_abs_diff(a.data(), b.data()) == 0.f);
    m.train();
    const Tensor c = m.forward(x, x, x).attn_output;
    CHECK(test::max_abs_diff(a.data(), c.data()) > 1e-3f);
}

TEST_CASE("tutorial D: MultiheadAttention names the module and the shapes on bad input") {
    expect_error([] { MultiheadAttention(10, 3); }, {"MultiheadAttention", "embed_dim must be divisible by num_heads",
                                                   "embed_dim=10", "num_heads=3"});
    expect_error([] { MultiheadAttention(8, 0); }, {"greater than 0"});
    MultiheadAttention m(8, 2);
    Tensor q = rnd({4, 2, 8}), k = rnd({5, 2, 8}), v = rnd({5, 2, 8});
    expect_error([&] { m.forward(rnd({4, 2, 6}), k, v); }, {"was expecting embedding dimension of 8", "(4,2,6)"});
    expect_error([&] { m.forward(rnd({4, 8}), k, v); }, {"query must be 3-D", "(4,8)"});
    expect_error([&] { m.forward(q, k, rnd({6, 2, 8})); }, {"key's sequence and batch dims", "(5,2,8)", "(6,2,8)"});
    expect_error([&] { m.forward(q, rnd({5, 3, 8}), rnd({5, 3, 8})); }, {"batch size", "(4,2,8)", "(5,3,8)"});
    expect_error([&] { m.forward(q, k, v, {}, true, Mask(xt::zeros<bool>({5, 5}))); },
                {"The shape of the 2D attn_mask is (5,5), but should be (4,5)."});
    expect_error([&] { m.forward(q, k, v, {}, true, Tensor::zeros({2, 4, 5})); },
                {"The shape of the 3D attn_mask is (2,4,5), but should be (4,4,5)."});
    expect_error([&] { m.forward(q, k, v, {}, true, Tensor::zeros({2, 2, 4, 5})); },
                {"attn_mask's dimension 4 is not supported"});
    expect_error([&] { m.forward(q, k, v, Mask(xt::zeros<bool>({5, 2}))); },
                {"expecting key_padding_mask shape of (2,5), but got (5,2)"});
    MultiheadAttention separate(8, 2, 0.f, true, 5, 7);
    expect_error([&] { separate.forward(q, rnd({5, 2, 8}), rnd({5, 2, 7})); }, {"key (5,2,8) must end in kdim 5"});
}

// ---------------------------------------------------------------- layers

TEST_CASE("tutorial D: TransformerEncoderLayer and TransformerDecoderLayer have torch's names") {
    TransformerEncoderLayer enc(small_layer());
    CHECK(names_of(enc) == std::vector<std::string>{
                               "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
                               "self_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight",
                               "linear2.bias", "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"});
    TransformerDecoderLayer dec(small_layer());
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
        TransformerDecoderLayer layer(small_layer(batch_first));
        randomize(layer, 6);
        Tensor tgt = batch_first ? rnd({2, 4, 8}, 22) : rnd({4, 2, 8}, 22);
        Tensor memory = batch_first ? rnd({2, 5, 8}, 23) : rnd({5, 2, 8}, 23);
        const auto f = [&](const V& x) { return layer.forward(x[0], x[1], causal, {}, tgt_pad, mem_pad); };
        CHECK(gradcheck(f, with_parameters({tgt, memory}, layer)));
    }
}

TEST_CASE("tutorial D: the layers name themselves and the shapes on bad input") {
    TransformerEncoderLayer enc(small_layer());
    expect_error([&] { enc.forward(rnd({5, 2, 6})); }, {"TransformerEncoderLayer", "src", "d_model = 8", "(5,2,6)"});
    TransformerDecoderLayer dec(small_layer());
    expect_error([&] { dec.forward(rnd({4, 2, 8}), rnd({5, 8})); }, {"TransformerDecoderLayer", "memory", "(5,8)"});
    expect_error([] { activation_from_string("tanh"); }, {"relu/gelu", "tanh"});
}

// ---------------------------------------------------------------- stacks and the Transformer

TEST_CASE("tutorial D: TransformerEncoder has independent layers and adds the encoding once, at the input") {
    TransformerEncoder with_pe(small_layer(), 2, true, PositionalEncodingAt::encoder_input);
    CHECK(names_of(with_pe).size() == 2 * 12 + 2);
    CHECK(names_of(with_pe).front() == "layers.0.self_attn.in_proj_weight");
    CHECK(names_of(with_pe).back() == "norm.bias");
    // erratum: the tutorial applies one layer twice; here layers.0 and layers.1 are separate tensors
    CHECK((*with_pe.layers)[0].linear1->weight.impl() != (*with_pe.layers)[1].linear1->weight.impl());
    // and, as torch.nn's deep copies of one layer, they start from equal values (docs/random.md)
    CHECK(test::max_abs_diff((*with_pe.layers)[0].linear1->weight.data(), (*with_pe.layers)[1].linear1->weight.data()) == 0.f);

    // erratum: once at the input = torch's encoder (pe none, same weights) applied to src + P
    TransformerEncoder without_pe(small_layer(), 2, true, PositionalEncodingAt::none);
    without_pe.load_state_dict(with_pe.state_dict());
    Tensor src = rnd({5, 2, 8}, 24);
    const Tensor a = with_pe.forward(src), b = without_pe.forward(positional_encoding(src, 8, 512, /*seq_axis=*/0));
    CHECK(test::max_abs_diff(a.data(), b.data()) == 0.f);
    CHECK(test::max_abs_diff(a.data(), without_pe.forward(src).data()) > 1e-3f);

    randomize(with_pe, 7);
    const Mask pad = padding_mask(2, 5, 4);
    CHECK(gradcheck([&](const V& x) { return with_pe.forward(x[0], {}, pad); }, with_parameters({src}, with_pe)));
}

TEST_CASE("tutorial D: TransformerDecoder stacks independent layers and passes gradcheck") {
    TransformerDecoder decoder(small_layer(), 2, true);
    CHECK(names_of(decoder).size() == 2 * 18 + 2);
    CHECK(names_of(decoder)[18] == "layers.1.self_attn.in_proj_weight");
    randomize(decoder, 8);
    Tensor tgt = rnd({4, 2, 8}, 25), memory = rnd({5, 2, 8}, 26);
    const Tensor causal = Transformer::generate_square_subsequent_mask(4);
    const Mask mem_pad = padding_mask(2, 5, 3);
    CHECK(gradcheck([&](const V& x) { return decoder.forward(x[0], x[1], causal, {}, {}, mem_pad); },
                    with_parameters({tgt, memory}, decoder)));
}

TEST_CASE("tutorial D: Transformer has exactly torch.nn.Transformer's parameter names") {
    Transformer model({.d_model = 8, .nhead = 2, .num_encoder_layers = 2, .num_decoder_layers = 1,
                       .dim_feedforward = 12});
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
    CHECK(xt::amax(xt::abs((*model.encoder->layers)[0].linear1->weight.data()))() <= std::sqrt(6.f / 20.f));
}

TEST_CASE("tutorial D: generate_square_subsequent_mask is 0 on and below the diagonal, -inf above") {
    const Tensor m = Transformer::generate_square_subsequent_mask(4);
    REQUIRE(m.shape() == Shape{4, 4});
    for (std::size_t i = 0; i < 4; ++i)
        for (std::size_t j = 0; j < 4; ++j) CHECK(m.data()(i, j) == (j <= i ? 0.f : -kInf));
    CHECK(!m.requires_grad());
}

TEST_CASE("tutorial D: Transformer passes gradcheck and its tgt_mask makes the decoder causal") {
    for (bool batch_first : {false, true}) {
        CAPTURE(batch_first);
        Transformer model({.d_model = 8, .nhead = 2, .num_encoder_layers = 1, .num_decoder_layers = 1,
                           .dim_feedforward = 12, .dropout = 0.f, .activation = Activation::gelu,
                           .batch_first = batch_first});
        randomize(model, 9);
        Tensor src = batch_first ? rnd({2, 5, 8}, 27) : rnd({5, 2, 8}, 27);
        Tensor tgt = batch_first ? rnd({2, 4, 8}, 28) : rnd({4, 2, 8}, 28);
        const Tensor causal = Transformer::generate_square_subsequent_mask(4);
        const Mask src_pad = padding_mask(2, 5, 3), tgt_pad = padding_mask(2, 4, 3);
        const auto f = [&](const V& x) { return model.forward(x[0], x[1], {}, causal, {}, src_pad, tgt_pad, src_pad); };
        CHECK(gradcheck(f, with_parameters({src, tgt}, model)));

        // changing the last target position leaves the outputs of the earlier ones unchanged
        Tensor tgt2 = Tensor(tgt.data());
        const int seq_axis = batch_first ? 1 : 0;
        for (std::size_t n = 0; n < 2; ++n)
            for (std::size_t e = 0; e < 8; ++e) (batch_first ? tgt2.data()(n, 3, e) : tgt2.data()(3, n, e)) += 5.f;
        const Tensor a = narrow(model.forward(src, tgt, {}, causal), seq_axis, 0, 3);
        const Tensor b = narrow(model.forward(src, tgt2, {}, causal), seq_axis, 0, 3);
        CHECK(test::max_abs_diff(a.data(), b.data()) < 1e-5f);
    }
}

TEST_CASE("tutorial D: Transformer checks src and tgt like torch and names the failing module") {
    Transformer model({.d_model = 8, .nhead = 2, .num_encoder_layers = 1, .num_decoder_layers = 1,
                       .dim_feedforward = 12});
    expect_error([&] { model.forward(rnd({5, 2, 8}), rnd({4, 3, 8})); },
                {"Transformer", "the batch number of src and tgt must be equal", "(5,2,8)", "(4,3,8)"});
    expect_error([&] { model.forward(rnd({5, 2, 8}), rnd({4, 2, 6})); },
                {"the feature number of src and tgt must be equal to d_model 8"});
    expect_error([&] { model.forward(rnd({5, 2, 8}), rnd({4, 2, 8}), Tensor::zeros({4, 4})); },
                {"MultiheadAttention 'encoder.layers.0.self_attn'", "2D attn_mask is (4,4), but should be (5,5)"});
    expect_error([&] { model.forward(rnd({5, 2, 8}), rnd({4, 2, 8}), {}, {}, {}, {}, {}, Mask(xt::zeros<bool>({2, 4}))); },
                {"MultiheadAttention 'decoder.layers.0.multihead_attn'", "key_padding_mask shape of (2,5)"});
    expect_error([] { Transformer({.d_model = 10, .nhead = 4}); }, {"embed_dim must be divisible by num_heads"});
    expect_error([&] { model.forward(rnd({600, 1, 8}), rnd({4, 1, 8})); },
                {"TransformerEncoder 'encoder'", "(600,1,8) has 600 positions", "max_len 512"});
}
