// Tutorial D (nn/tutorial_d, torch.nn's Transformer): scaled_dot_product_attention and MultiheadAttention: names, init,
// gradchecks, add_bias_kv / add_zero_attn, dropout (the weights returned after it, as torch), bad input. Parity runs in tests/parity_test.cpp.
#include "tests/nn/tutorial_d_util.hpp"

#include <xtensor/xmath.hpp>

#include <algorithm>
#include <cmath>

TEST_SUITE_BEGIN("tutorial_d");

using namespace xtgrad;
using namespace xtgrad::test::tutorial_d;
using test::expect_error;
using test::rnd;

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

TEST_CASE("tutorial D: MultiheadAttention has torch's parameter names and shapes") {
    MultiheadAttention packed(8, 2);
    CHECK(names_of(packed) == std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"});
    CHECK(packed.in_proj_weight.shape() == Shape{24, 8});
    CHECK(packed.in_proj_bias.shape() == Shape{24});
    // torch's initialisation: zero biases, xavier_uniform_ bound sqrt(6 / (8 + 24)) on the packed matrix
    CHECK(xt::amax(xt::abs(packed.in_proj_bias.data()))() == 0.f);
    CHECK(xt::amax(xt::abs(packed.out_proj->bias.data()))() == 0.f);
    CHECK(xt::amax(xt::abs(packed.in_proj_weight.data()))() <= std::sqrt(6.f / 32.f));

    MultiheadAttention separate(MultiheadAttentionOptions(8, 2).kdim(5).vdim(7));
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
        MultiheadAttention m(MultiheadAttentionOptions(8, 2).kdim(5).vdim(7).batch_first(true));
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
    expect_error([&] { m.forward(rnd({4, 8}), k, v); }, {"For unbatched (2-D) `query`", "(4,8)", "(5,2,8)"});
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
    MultiheadAttention separate(MultiheadAttentionOptions(8, 2).kdim(5).vdim(7));
    expect_error([&] { separate.forward(q, rnd({5, 2, 8}), rnd({5, 2, 7})); }, {"key (5,2,8) must end in kdim 5"});
}

TEST_CASE("tutorial D: add_bias_kv appends a learned key and value, add_zero_attn one of zeros") {
    MultiheadAttention m(MultiheadAttentionOptions(8, 2).add_bias_kv(true).add_zero_attn(true));
    // torch's state_dict order: own parameters (bias_k, bias_v after in_proj_bias), then out_proj
    CHECK(names_of(m) == std::vector<std::string>{"in_proj_weight", "in_proj_bias", "bias_k", "bias_v",
                                                  "out_proj.weight", "out_proj.bias"});
    CHECK(m.bias_k.shape() == Shape{1, 1, 8});
    CHECK(xt::amax(xt::abs(m.bias_v.data()))() > 0.f);  // xavier_normal_, not zeros
    randomize(m, 11);
    Tensor q = rnd({4, 2, 8}, 12), k = rnd({5, 2, 8}, 13), v = rnd({5, 2, 8}, 14);
    const Mask pad = padding_mask(2, 5, 3);
    const auto out = m.forward(q, k, v, pad, true, {}, /*average_attn_weights=*/false);
    REQUIRE(out.attn_output_weights.shape() == Shape{2, 2, 4, 7});  // 5 keys + bias_k + the zero key
    for (std::size_t i = 0; i < 4; ++i) {
        CHECK(out.attn_output_weights.data()(0, 1, i, 4) == 0.f);  // padding still masked
        CHECK(out.attn_output_weights.data()(0, 1, i, 5) > 0.f);   // the added keys are never masked
        CHECK(out.attn_output_weights.data()(0, 1, i, 6) > 0.f);
    }
    // the zero key has score 0 and value 0: it only takes weight away from the others
    SUBCASE("gradcheck through bias_k, bias_v and the zero key, with a 2-D float mask") {
        Array bias = xt::zeros<float>({4, 5});
        bias(1, 2) = -kInf;
        const Tensor attn_mask(bias);
        const auto f = [&](const V& x) { return m.forward(x[0], x[1], x[2], pad, true, attn_mask).attn_output; };
        CHECK(gradcheck(f, with_parameters({q, k, v}, m)));
    }
    SUBCASE("each alone") {
        MultiheadAttention kv(MultiheadAttentionOptions(8, 2).add_bias_kv(true));
        MultiheadAttention zero(MultiheadAttentionOptions(8, 2).add_zero_attn(true).batch_first(true));
        CHECK(kv.forward(q, k, v).attn_output_weights.shape() == Shape{2, 4, 6});
        CHECK(!zero.bias_k.defined());
        Tensor qb = rnd({2, 4, 8}, 15), kb = rnd({2, 5, 8}, 16);
        CHECK(zero.forward(qb, kb, kb).attn_output_weights.shape() == Shape{2, 4, 6});
        CHECK(gradcheck([&](const V& x) { return zero.forward(x[0], x[1], x[1]).attn_output; },
                        with_parameters({qb, kb}, zero)));
    }
}

TEST_CASE("tutorial D: MultiheadAttentionOptions: required sizes, torch's keywords as chained setters") {
    const MultiheadAttentionOptions o = MultiheadAttentionOptions(512, 8).dropout(0.1f).batch_first(true);
    CHECK(o.embed_dim() == 512);
    CHECK(o.dropout() == 0.1f);
    CHECK(o.bias());  // torch's defaults
    CHECK(!o.add_bias_kv());
    CHECK(!o.add_zero_attn());
    CHECK(o.kdim() == 0);
    MultiheadAttention positional(8, 2, 0.f, true, /*add_bias_kv=*/true, /*add_zero_attn=*/false, /*kdim=*/5);
    CHECK(names_of(positional) == std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight",
                                                           "in_proj_bias", "bias_k", "bias_v", "out_proj.weight",
                                                           "out_proj.bias"});
}


TEST_CASE("tutorial D: in training the attention weights returned are those after dropout, as torch returns them") {
    const float p = 0.5f;
    for (const auto fusion : {nn::AttentionFusion::composed, nn::AttentionFusion::fused}) {
        nn::set_attention_fusion(fusion);
        MultiheadAttention m(8, 2, p);
        randomize(m, 21);
        const Tensor query = rnd({4, 3, 8}, 22), key = rnd({5, 3, 8}, 23), value = rnd({5, 3, 8}, 24);
        m.eval();
        const Array before = m.forward(query, key, value, {}, true, {}, false).attn_output_weights.data();
        m.train();
        const auto [out, weights] = m.forward(query, key, value, {}, true, {}, false);  // (N, h, L, S)
        const Array w = weights.data();
        // zeros where dropped, the rest the eval weights scaled by 1/(1-p)
        int dropped = 0, kept = 0;
        for (std::size_t i = 0; i < w.size(); ++i) {
            if (w.flat(i) == 0.f) {
                ++dropped;
            } else {
                ++kept;
                CHECK(w.flat(i) == doctest::Approx(before.flat(i) / (1.f - p)).epsilon(1e-6));
            }
        }
        CHECK(dropped > 10);
        CHECK(kept > 10);
        // these weights are the ones the output used: out = out_proj(merge_heads(weights · v_proj)), by hand
        const Array W = m.in_proj_weight.data(), b = m.in_proj_bias.data();
        const Array Wo = m.out_proj->weight.data(), bo = m.out_proj->bias.data(), val = value.data();
        const std::size_t N = 3, h = 2, L = 4, S = 5, E = 8, hd = 4;
        Array vp = xt::zeros<float>({S, N, E});  // value · W_vᵀ + b_v, W_v the rows 2E:3E
        for (std::size_t s = 0; s < S; ++s)
            for (std::size_t n = 0; n < N; ++n)
                for (std::size_t e = 0; e < E; ++e) {
                    float acc = b(2 * E + e);
                    for (std::size_t f = 0; f < E; ++f) acc += val(s, n, f) * W(2 * E + e, f);
                    vp(s, n, e) = acc;
                }
        float worst = 0.f;
        for (std::size_t l = 0; l < L; ++l)
            for (std::size_t n = 0; n < N; ++n) {
                float ctx[8] = {};
                for (std::size_t head = 0; head < h; ++head)
                    for (std::size_t d = 0; d < hd; ++d)
                        for (std::size_t s = 0; s < S; ++s) ctx[head * hd + d] += w(n, head, l, s) * vp(s, n, head * hd + d);
                for (std::size_t e = 0; e < E; ++e) {
                    float y = bo(e);
                    for (std::size_t f = 0; f < E; ++f) y += ctx[f] * Wo(e, f);
                    worst = std::max(worst, std::abs(y - out.data()(l, n, e)));
                }
            }
        CHECK(worst < 1e-5f);
    }
    nn::set_attention_fusion(nn::AttentionFusion::automatic);

    // the function alone: attn after dropout, out = attn · v
    const Tensor q = rnd({2, 3, 4}, 31), k = rnd({2, 5, 4}, 32), v = rnd({2, 5, 4}, 33);
    const nn::AttentionResult r = scaled_dot_product_attention(q, k, v, {}, p, /*training=*/true);
    CHECK(test::max_abs_diff(r.context.data(), matmul(r.weights, v).data()) < 1e-6f);
    CHECK(xt::any(xt::equal(r.weights.data(), 0.f)));
    const nn::AttentionResult e = scaled_dot_product_attention(q, k, v, {}, p, /*training=*/false);
    CHECK(xt::all(xt::isclose(xt::sum(e.weights.data(), {2}), 1.f)));
}

TEST_SUITE_END();
