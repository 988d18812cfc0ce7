// Tutorial D (nn/tutorial_d, torch.nn's Transformer): the functional core, F's
// _in_projection_packed, _in_projection and multi_head_attention_forward, as free functions.
#include "tests/nn/tutorial_d_util.hpp"

TEST_SUITE_BEGIN("tutorial_d");

using namespace xtgrad;
using namespace xtgrad::test::tutorial_d;
using test::expect_error;
using test::rnd;

namespace {

// The three blocks of a packed projection computed one by one.
InProjection by_blocks(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& w, const Tensor& b) {
    const std::size_t E = q.size(-1);
    const auto block = [&](const Tensor& x, std::size_t i) {
        return linear(x, narrow(w, 0, i * E, E), narrow(b, 0, i * E, E));
    };
    return {block(q, 0), block(k, 1), block(v, 2)};
}

void check_close(const InProjection& a, const InProjection& b) {
    CHECK(test::max_abs_diff(a.q.data(), b.q.data()) < 1e-5f);
    CHECK(test::max_abs_diff(a.k.data(), b.k.data()) < 1e-5f);
    CHECK(test::max_abs_diff(a.v.data(), b.v.data()) < 1e-5f);
}

// The options MultiheadAttention m passes to the function (in eval mode: no dropout).
MultiheadAttentionForwardFuncOptions options_of(const MultiheadAttention& m) {
    return MultiheadAttentionForwardFuncOptions(m.embed_dim, m.num_heads, m.in_proj_weight, m.in_proj_bias, m.bias_k,
                                                m.bias_v, m.add_zero_attn, m.dropout, m.out_proj->weight,
                                                m.out_proj->bias)
        .training(false);
}

}  // namespace

TEST_CASE("tutorial D: in_projection_packed takes torch's three branches, all equal to the row blocks") {
    Tensor w = rnd({24, 8}, 1), b = rnd({24}, 2);
    Tensor x = rnd({2, 5, 8}, 3), y = rnd({2, 4, 8}, 4), z = rnd({2, 4, 8}, 5);
    SUBCASE("q is k is v: self-attention, one product with the whole (3E, E) weight, chunked") {
        check_close(in_projection_packed(x, x, x, w, b), by_blocks(x, x, x, w, b));
        CHECK(gradcheck([](const V& a) { const InProjection p = in_projection_packed(a[0], a[0], a[0], a[1], a[2]);
                                         return p.q + p.k * 2.f + p.v * 3.f; },
                        {x, w, b}));
    }
    SUBCASE("k is v: encoder-decoder attention") {
        check_close(in_projection_packed(x, y, y, w, b), by_blocks(x, y, y, w, b));
        CHECK(gradcheck([](const V& a) { const InProjection p = in_projection_packed(a[0], a[1], a[1], a[2], a[3]);
                                         return sum(p.q) + sum(p.k * 2.f) + sum(p.v * 3.f); },
                        {x, y, w, b}));
    }
    SUBCASE("three tensors, no bias") {
        const InProjection p = in_projection_packed(x, y, z, w);
        CHECK(p.q.shape() == Shape{2, 5, 8});
        CHECK(test::max_abs_diff(p.k.data(), linear(y, narrow(w, 0, 8, 8)).data()) < 1e-5f);
        CHECK(gradcheck([](const V& a) { const InProjection r = in_projection_packed(a[0], a[1], a[2], a[3]);
                                         return sum(r.q) + sum(r.k * 2.f) + sum(r.v * 3.f); },
                        {x, y, z, w}));
    }
    expect_error([&] { in_projection_packed(x, y, z, rnd({24, 6})); },
                 {"_in_projection_packed", "expecting packed weights shape of (24,8), but got (24,6)"});
    expect_error([&] { in_projection_packed(x, rnd({2, 4, 6}), z, w); }, {"share the embedding dimension", "(2,4,6)"});
}

TEST_CASE("tutorial D: in_projection projects q, k and v of different widths to E") {
    Tensor q = rnd({3, 2, 8}, 6), k = rnd({4, 2, 5}, 7), v = rnd({4, 2, 7}, 8);
    Tensor wq = rnd({8, 8}, 9), wk = rnd({8, 5}, 10), wv = rnd({8, 7}, 11), bq = rnd({8}, 12);
    const InProjection p = in_projection(q, k, v, wq, wk, wv, bq);
    CHECK(p.k.shape() == Shape{4, 2, 8});
    CHECK(p.v.shape() == Shape{4, 2, 8});
    CHECK(gradcheck([](const V& a) { const InProjection r = in_projection(a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
                                     return sum(r.q) + sum(r.k * 2.f) + sum(r.v * 3.f); },
                    {q, k, v, wq, wk, wv, bq}));
    expect_error([&] { in_projection(q, k, v, wq, rnd({8, 8}), wv); },
                 {"_in_projection", "expecting key weights shape of (8,5), but got (8,8)"});
    expect_error([&] { in_projection(q, k, v, wq, wk, wv, rnd({5})); }, {"expecting query bias shape of (8), but got (5)"});
}

TEST_CASE("tutorial D: multi_head_attention_forward is MultiheadAttention's forward, with torch's arguments") {
    MultiheadAttention m(8, 2);
    randomize(m, 1);
    m.eval();
    Tensor q = rnd({4, 2, 8}, 2), k = rnd({5, 2, 8}, 3), v = rnd({5, 2, 8}, 4);
    const Mask pad = padding_mask(2, 5, 3);
    const auto module = m.forward(q, k, v, pad);
    // the tutorial's call: positional arguments up to out_proj_bias, then keywords
    const auto positional = multi_head_attention_forward(q, k, v, 8, 2, m.in_proj_weight, m.in_proj_bias, {}, {}, false,
                                                         0.f, m.out_proj->weight, m.out_proj->bias, false, pad);
    const auto with_options = multi_head_attention_forward(q, k, v, options_of(m).key_padding_mask(pad));
    CHECK(test::max_abs_diff(module.attn_output.data(), positional.attn_output.data()) == 0.f);
    CHECK(test::max_abs_diff(module.attn_output_weights.data(), with_options.attn_output_weights.data()) == 0.f);
    const auto per_head = multi_head_attention_forward(q, k, v, options_of(m).average_attn_weights(false));
    CHECK(per_head.attn_output_weights.shape() == Shape{2, 2, 4, 5});
    CHECK(!multi_head_attention_forward(q, k, v, options_of(m).need_weights(false)).attn_output_weights.defined());
    // every argument differentiable: inputs and weights
    const auto f = [&](const V& a) {
        return multi_head_attention_forward(a[0], a[1], a[2],
                                            MultiheadAttentionForwardFuncOptions(8, 2, a[3], a[4], {}, {}, false, 0.f,
                                                                                 a[5], a[6])
                                                .key_padding_mask(pad))
            .attn_output;
    };
    CHECK(gradcheck(f, {q, k, v, m.in_proj_weight, m.in_proj_bias, m.out_proj->weight, m.out_proj->bias}));
}

TEST_CASE("tutorial D: multi_head_attention_forward with separate weights, static_k and static_v") {
    MultiheadAttention m(MultiheadAttentionOptions(8, 2).kdim(5).vdim(7));
    randomize(m, 5);
    m.eval();
    Tensor q = rnd({4, 2, 8}, 6), k = rnd({5, 2, 5}, 7), v = rnd({5, 2, 7}, 8);
    const auto separate = options_of(m)
                              .use_separate_proj_weight(true)
                              .q_proj_weight(m.q_proj_weight)
                              .k_proj_weight(m.k_proj_weight)
                              .v_proj_weight(m.v_proj_weight);
    CHECK(test::max_abs_diff(multi_head_attention_forward(q, k, v, separate).attn_output.data(),
                             m.forward(q, k, v).attn_output.data()) == 0.f);
    expect_error([&] { multi_head_attention_forward(q, k, k, options_of(m)); },
                 {"use_separate_proj_weight is false but in_proj_weight is None"});

    // static_k / static_v (N·h, S, E/h) replace the projected keys and values: 6 keys here
    Tensor static_k = rnd({4, 6, 4}, 9), static_v = rnd({4, 6, 4}, 10);
    const auto with_static = MultiheadAttentionForwardFuncOptions(separate).static_k(static_k).static_v(static_v);
    const auto out = multi_head_attention_forward(q, k, v, with_static);
    CHECK(out.attn_output_weights.shape() == Shape{2, 4, 6});
    // the same as attention over those keys by hand: heads of q against static_k, row n·h + head
    const Tensor qh = nn::split_heads(transpose(linear(q, m.q_proj_weight, narrow(m.in_proj_bias, 0, 0, 8)), 0, 1), 2);
    const nn::AttentionResult by_hand =
        scaled_dot_product_attention(qh, reshape(static_k, {2, 2, 6, 4}), reshape(static_v, {2, 2, 6, 4}));
    const Tensor expected = transpose(linear(nn::merge_heads(by_hand.context), m.out_proj->weight, m.out_proj->bias), 0, 1);
    CHECK(test::max_abs_diff(out.attn_output.data(), expected.data()) < 1e-5f);
    CHECK(gradcheck([&](const V& a) { return multi_head_attention_forward(
                                                 a[0], k, v, MultiheadAttentionForwardFuncOptions(separate).static_k(a[1]).static_v(a[2]))
                                                 .attn_output; },
                    {q, static_k, static_v}));
    expect_error([&] { multi_head_attention_forward(q, k, v, MultiheadAttentionForwardFuncOptions(separate).static_k(rnd({2, 6, 4}))); },
                 {"expecting static_k of shape (N·num_heads, S, head_dim) = (4, S, 4), but got (2,6,4)"});
    expect_error([&] { multi_head_attention_forward(
            q, k, v, MultiheadAttentionForwardFuncOptions(with_static).key_padding_mask(padding_mask(2, 5, 3))); },
                 {"expecting key_padding_mask shape of (2,6), but got (2,5)"});
}

TEST_CASE("tutorial D: multi_head_attention_forward checks its arguments as torch does") {
    MultiheadAttention m(8, 2);
    Tensor q = rnd({4, 2, 8}), k = rnd({5, 2, 8}), v = rnd({5, 2, 8});
    expect_error([&] { multi_head_attention_forward(q, k, v, options_of(m).embed_dim_to_check(6)); },
                 {"multi_head_attention_forward", "was expecting embedding dimension of 6, but got query (4,2,8)"});
    expect_error([&] { multi_head_attention_forward(q, k, v, options_of(m).num_heads(3)); },
                 {"embed_dim 8 not divisible by num_heads 3"});
    expect_error([&] { multi_head_attention_forward(q, k, rnd({5, 2, 6}), options_of(m)); },
                 {"key shape (5,2,8) does not match value shape (5,2,6)"});
    expect_error([&] { multi_head_attention_forward(q, k, v, options_of(m).bias_k(rnd({1, 1, 8}))); },
                 {"bias_k and bias_v are given together or not at all"});
    expect_error([&] { multi_head_attention_forward(q, k, v, options_of(m).bias_k(rnd({1, 1, 6})).bias_v(rnd({1, 1, 8}))); },
                 {"expecting bias_k shape of (1,1,8), but got (1,1,6)"});
    expect_error([&] {
        multi_head_attention_forward(q, k, v, options_of(m).bias_k(rnd({1, 1, 8})).bias_v(rnd({1, 1, 8})).static_k(rnd({4, 5, 4})));
    }, {"bias cannot be added to static key or value"});
    expect_error([&] { multi_head_attention_forward(q, k, v, options_of(m).out_proj_weight(rnd({8, 6}))); },
                 {"expecting out_proj_weight shape of (8,8), but got (8,6)"});
}

TEST_SUITE_END();
