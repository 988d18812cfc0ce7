#include <xtgrad/nn/tutorial_d/functional.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/nn/attention.hpp>
#include <xtgrad/nn/tutorial_d/scaled_dot_product_attention.hpp>

#include <cmath>

namespace xtgrad::nn::tutorial_d {

namespace {

std::string shape_or_none(const Tensor& t) { return t.defined() ? shape_str(t.shape()) : "None"; }

bool same_tensor(const Tensor& a, const Tensor& b) { return a.impl() == b.impl(); }

// torch's assertions on the projection weights and biases, as Errors.
void expect_shape(const std::string& who, const char* what, const Tensor& t, const Shape& shape, bool optional) {
    if ((optional && !t.defined()) || (t.defined() && t.shape() == shape)) return;
    fail("{}: expecting {} shape of {}, but got {}", who, what, shape_str(shape), shape_or_none(t));
}

void expect_inputs(const std::string& who, const Tensor& q, const Tensor& k, const Tensor& v) {
    using Named = std::pair<const char*, const Tensor*>;
    for (const auto& [name, t] : {Named{"q", &q}, Named{"k", &k}, Named{"v", &v}})
        if (!t->defined() || t->dim() == 0)
            fail("{}: {} must have a last (embedding) dimension, got {}", who, name, shape_or_none(*t));
}

}  // namespace

InProjection in_projection_packed(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& w, const Tensor& b,
                                  const std::string& who) {
    expect_inputs(who, q, k, v);
    const std::size_t E = q.size(-1);
    if (k.size(-1) != E || v.size(-1) != E)
        fail("{}: q, k and v must share the embedding dimension, got q {}, k {} and v {}", who, shape_str(q.shape()),
             shape_str(k.shape()), shape_str(v.shape()));
    expect_shape(who, "packed weights", w, {3 * E, E}, false);
    expect_shape(who, "packed bias", b, {3 * E}, true);
    // torch's _in_projection_packed multiplies once by the whole (3E, E) matrix for self-attention
    // (by its rows E:3E for k and v of encoder-decoder attention) and chunks the result; each of q,
    // k, v is the product with its own row block of w (the same dot products), which linear_rows
    // reads in place, without the chunk's and narrow's copies (docs/performance.md, "Design choices").
    const auto project = [&](const Tensor& x, std::size_t block) { return linear_rows(x, w, b, block * E, E); };
    return {project(q, 0), project(k, 1), project(v, 2)};
}

InProjection in_projection(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& w_q, const Tensor& w_k,
                           const Tensor& w_v, const Tensor& b_q, const Tensor& b_k, const Tensor& b_v,
                           const std::string& who) {
    expect_inputs(who, q, k, v);
    const std::size_t Eq = q.size(-1), Ek = k.size(-1), Ev = v.size(-1);
    expect_shape(who, "query weights", w_q, {Eq, Eq}, false);
    expect_shape(who, "key weights", w_k, {Eq, Ek}, false);
    expect_shape(who, "value weights", w_v, {Eq, Ev}, false);
    expect_shape(who, "query bias", b_q, {Eq}, true);
    expect_shape(who, "key bias", b_k, {Eq}, true);
    expect_shape(who, "value bias", b_v, {Eq}, true);
    return {linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)};
}

MultiheadAttentionForwardFuncOptions::MultiheadAttentionForwardFuncOptions(
    std::size_t embed_dim_to_check, std::size_t num_heads, Tensor in_proj_weight, Tensor in_proj_bias, Tensor bias_k,
    Tensor bias_v, bool add_zero_attn, float dropout_p, Tensor out_proj_weight, Tensor out_proj_bias)
    : embed_dim_to_check_(embed_dim_to_check),
      num_heads_(num_heads),
      in_proj_weight_(std::move(in_proj_weight)),
      in_proj_bias_(std::move(in_proj_bias)),
      bias_k_(std::move(bias_k)),
      bias_v_(std::move(bias_v)),
      add_zero_attn_(add_zero_attn),
      dropout_p_(dropout_p),
      out_proj_weight_(std::move(out_proj_weight)),
      out_proj_bias_(std::move(out_proj_bias)) {}

namespace {

struct Sizes {
    std::size_t L, N, E, S, h, head_dim;
};

// The shape checks of torch's _mha_shape_check and multi_head_attention_forward, as Errors.
Sizes check_inputs(const Tensor& query, const Tensor& key, const Tensor& value,
                   const MultiheadAttentionForwardFuncOptions& o) {
    const std::string& who = o.who();
    const char* layout = o.batch_first() ? "(N, L, features) (batch_first)" : "(L, N, features)";
    using Named = std::pair<const char*, const Tensor*>;
    for (const auto& [name, t] : {Named{"query", &query}, Named{"key", &key}, Named{"value", &value}})
        if (!t->defined() || t->dim() != 3)
            fail("{}: {} must be 3-D {}, got {}", who, name, layout, shape_or_none(*t));
    const int seq = o.batch_first() ? 1 : 0, batch = 1 - seq;
    Sizes s{query.size(seq), query.size(batch), query.size(2), key.size(seq), o.num_heads(), 0};
    if (s.E != o.embed_dim_to_check())
        fail("{}: was expecting embedding dimension of {}, but got query {}", who, o.embed_dim_to_check(),
             shape_str(query.shape()));
    if (s.h == 0 || s.E % s.h != 0)
        fail("{}: embed_dim {} not divisible by num_heads {}", who, s.E, s.h);
    s.head_dim = s.E / s.h;
    if (key.size(batch) != s.N)
        fail("{}: query {} and key {} differ in the batch size (axis {})", who, shape_str(query.shape()),
             shape_str(key.shape()), batch);
    if (key.size(0) != value.size(0) || key.size(1) != value.size(1))
        fail("{}: key's sequence and batch dims of {} do not match value's {}", who, shape_str(key.shape()),
             shape_str(value.shape()));
    if (!o.use_separate_proj_weight() && key.shape() != value.shape())
        fail("{}: key shape {} does not match value shape {}", who, shape_str(key.shape()), shape_str(value.shape()));
    if (o.bias_k().defined() != o.bias_v().defined())
        fail("{}: bias_k and bias_v are given together or not at all, got bias_k {} and bias_v {}", who,
             shape_or_none(o.bias_k()), shape_or_none(o.bias_v()));
    if (o.bias_k().defined() && (o.static_k().defined() || o.static_v().defined()))
        fail("{}: bias cannot be added to static key or value", who);
    for (const auto& [name, t] : {Named{"bias_k", &o.bias_k()}, Named{"bias_v", &o.bias_v()}})
        expect_shape(who, name, *t, {1, 1, s.E}, true);
    for (const auto& [name, t] : {Named{"static_k", &o.static_k()}, Named{"static_v", &o.static_v()}})
        if (t->defined() && (t->dim() != 3 || t->size(0) != s.N * s.h || t->size(2) != s.head_dim))
            fail("{}: expecting {} of shape (N·num_heads, S, head_dim) = ({}, S, {}), but got {}", who, name,
                 s.N * s.h, s.head_dim, shape_str(t->shape()));
    if (o.static_k().defined()) s.S = o.static_k().size(1);
    if (o.static_v().defined() && o.static_v().size(1) != s.S)
        fail("{}: static_v {} must have the {} keys of {}", who, shape_str(o.static_v().shape()), s.S,
             o.static_k().defined() ? "static_k" : "key");
    return s;
}

// attn_mask in the (N, h, L, S) layout of the scores: (L, S) broadcasts, (N·h, L, S) is reshaped
// so that row n·h + head lands on [n][head].
AttentionMask checked_attn_mask(const AttentionMask& m, const Sizes& s, const std::string& who) {
    if (!m.defined()) return {};
    if (m.from_bytes()) warn("Byte tensor for attn_mask in nn.MultiheadAttention is deprecated. Use bool tensor instead.");
    if (m.dim() == 2) {
        if (m.shape() != Shape{s.L, s.S})
            fail("{}: The shape of the 2D attn_mask is {}, but should be {}.", who, shape_str(m.shape()),
                 shape_str(Shape{s.L, s.S}));
        return m;
    }
    if (m.dim() == 3) {
        const Shape expected{s.N * s.h, s.L, s.S};
        if (m.shape() != expected)
            fail("{}: The shape of the 3D attn_mask is {}, but should be {}.", who, shape_str(m.shape()),
                 shape_str(expected));
        return m.reshaped({s.N, s.h, s.L, s.S});
    }
    fail("{}: attn_mask's dimension {} is not supported (shape {}); expected (L, S) = {} or (N·num_heads, L, S) = {}",
         who, m.dim(), shape_str(m.shape()), shape_str(Shape{s.L, s.S}), shape_str(Shape{s.N * s.h, s.L, s.S}));
}

AttentionMask checked_key_padding_mask(const AttentionMask& m, const Sizes& s, const std::string& who) {
    if (m.from_bytes())  // torch 1.13's check (it converted and warned before 1.12)
        fail("{}: only bool and floating types of key_padding_mask are supported (got a uint8 ByteMask of shape {}: "
             "pass a Mask, e.g. bytes != 0)", who, shape_str(m.shape()));
    if (m.defined() && m.shape() != Shape{s.N, s.S})
        fail("{}: expecting key_padding_mask shape of {}, but got {}", who, shape_str(Shape{s.N, s.S}),
             shape_str(m.shape()));
    return m;
}

InProjection project(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in,
                     const MultiheadAttentionForwardFuncOptions& o) {
    const std::string& who = o.who();
    if (!o.use_separate_proj_weight()) {
        if (!o.in_proj_weight().defined()) fail("{}: use_separate_proj_weight is false but in_proj_weight is None", who);
        return in_projection_packed(q_in, k_in, v_in, o.in_proj_weight(), o.in_proj_bias(), who);
    }
    using Named = std::pair<const char*, const Tensor*>;
    for (const auto& [name, t] : {Named{"q_proj_weight", &o.q_proj_weight()}, Named{"k_proj_weight", &o.k_proj_weight()},
                                  Named{"v_proj_weight", &o.v_proj_weight()}})
        if (!t->defined()) fail("{}: use_separate_proj_weight is true but {} is None", who, name);
    const std::size_t E = q_in.size(2);
    expect_shape(who, "in_proj_bias", o.in_proj_bias(), {3 * E}, true);
    const Tensor& b = o.in_proj_bias();
    // separate weights, one packed bias (3E): its blocks (E values each, a copy of no consequence)
    const auto bias_block = [&](std::size_t block) { return b.defined() ? narrow(b, 0, block * E, E) : Tensor(); };
    return in_projection(q_in, k_in, v_in, o.q_proj_weight(), o.k_proj_weight(), o.v_proj_weight(), bias_block(0),
                         bias_block(1), bias_block(2), who);
}

// torch's _mha_shape_check: a 3-D query is batched, a 2-D one unbatched, and key, value and the
// masks must agree with it (torch's wording, with the shapes).
bool is_batched(const Tensor& query, const Tensor& key, const Tensor& value, const MultiheadAttentionForwardFuncOptions& o) {
    const std::string& who = o.who();
    if (!query.defined() || (query.dim() != 2 && query.dim() != 3))
        fail("{}: query should be unbatched 2D or batched 3D tensor but received {}-D query tensor {}", who,
             query.defined() ? query.dim() : std::size_t{0}, shape_or_none(query));
    const bool batched = query.dim() == 3;
    const std::size_t d = batched ? 3 : 2;
    const char* kind = batched ? "batched (3-D)" : "unbatched (2-D)";
    if (!key.defined() || !value.defined() || key.dim() != d || value.dim() != d)
        fail("{}: For {} `query`, expected `key` and `value` to be {}-D but found {} and {} (query {})", who, kind, d,
             shape_or_none(key), shape_or_none(value), shape_str(query.shape()));
    const AttentionMask& kpm = o.key_padding_mask();
    if (kpm.defined() && kpm.dim() != d - 1)
        fail("{}: For {} `query`, expected `key_padding_mask` to be `None` or {}-D but found {}-D tensor {} instead",
             who, kind, d - 1, kpm.dim(), shape_str(kpm.shape()));
    const AttentionMask& attn = o.attn_mask();  // batched: checked against the expected shapes later
    if (!batched && attn.defined() && attn.dim() != 2 && attn.dim() != 3)
        fail("{}: For {} `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found {}-D tensor {} instead", who,
             kind, attn.dim(), shape_str(attn.shape()));
    if (!batched && attn.defined() && attn.dim() == 3) {
        const Shape expected{o.num_heads(), query.size(0), key.size(0)};
        if (attn.shape() != expected)
            fail("{}: Expected `attn_mask` shape to be {} but got {}", who, shape_str(expected), shape_str(attn.shape()));
    }
    return batched;
}

MultiheadAttentionOutput batched_forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                         const MultiheadAttentionForwardFuncOptions& o);

}  // namespace

MultiheadAttentionOutput multi_head_attention_forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                                      const MultiheadAttentionForwardFuncOptions& o) {
    if (is_batched(query, key, value, o)) return batched_forward(query, key, value, o);
    // Unbatched, as torch: a batch axis of 1 in, squeezed out of the results. query (L, E), key
    // (S, kdim), value (S, vdim), key_padding_mask (S), attn_mask (L, S) or (num_heads, L, S)
    // (the (N·num_heads, L, S) of N = 1); a tensor given twice stays one tensor.
    const int batch = o.batch_first() ? 0 : 1;
    const Tensor q = unsqueeze(query, batch);
    const Tensor k = same_tensor(key, query) ? q : unsqueeze(key, batch);
    const Tensor v = same_tensor(value, key) ? k : same_tensor(value, query) ? q : unsqueeze(value, batch);
    MultiheadAttentionForwardFuncOptions with_batch = o;
    if (const AttentionMask& kpm = o.key_padding_mask(); kpm.defined()) {
        if (kpm.shape() != Shape{key.size(0)})
            fail("{}: expecting key_padding_mask shape of {}, but got {}", o.who(), shape_str(Shape{key.size(0)}),
                 shape_str(kpm.shape()));
        with_batch.key_padding_mask(kpm.reshaped({1, key.size(0)}));
    }
    MultiheadAttentionOutput r = batched_forward(q, k, v, with_batch);
    r.attn_output = squeeze(r.attn_output, batch);                                           // (L, E)
    if (r.attn_output_weights.defined()) r.attn_output_weights = squeeze(r.attn_output_weights, 0);  // (L, S) or (h, L, S)
    return r;
}

namespace {

// A mask that broadcasts to the scores (N, h, L, S), for the scores seen as (1, N·h, L, S): a 4-D
// one made whole over N and h first (a padding mask (N, 1, 1, S) is per batch, not per block).
AttentionMask for_blocks_in_a_row(const AttentionMask& m, std::size_t N, std::size_t h) {
    if (!m.defined() || m.dim() < 4) return m;
    const Shape s = m.shape(), whole{N, h, s[2], s[3]}, row{1, N * h, s[2], s[3]};
    if (s[0] == 1 && s[1] == 1) return m;
    if (m.is_bool()) return AttentionMask(Mask(xt::broadcast(m.masked(), whole))).reshaped(row);
    return AttentionMask(Tensor(Array(xt::broadcast(m.additive().data(), whole)))).reshaped(row);
}

// The plain case (no bias_kv, static keys or zero attention; nobody reads the weights; a size the
// fused core takes) on the heads where the in-projection writes them (nn::attention_on_packed_heads):
// no batch-first transposes, no split or merge copies, the same numbers as the lines of
// batched_forward below. Batch first, (N, L, E) holds N·h blocks, h to a batch row; sequence
// first, (L, N, E) is (1, L, N·E): N·h blocks side by side in every row. Undefined elsewhere.
Tensor on_packed_heads(const Tensor& query, const Tensor& key, const Tensor& value,
                       const MultiheadAttentionForwardFuncOptions& o, const Sizes& s, const AttentionMask& attn,
                       const AttentionMask& padding) {
    if (o.bias_k().defined() || o.static_k().defined() || o.static_v().defined() || o.add_zero_attn() ||
        !packed_heads_take(s.N * s.h * s.L * s.S, o.need_weights()))
        return Tensor();
    InProjection p = project(query, key, value, o);  // each (N, ·, E) or (·, N, E), as given
    AttentionMask mask = attn.merged_with(padding.defined() ? padding.reshaped({s.N, 1, 1, s.S}) : padding);
    const long N = static_cast<long>(s.N), L = static_cast<long>(s.L), S = static_cast<long>(s.S);
    // The reshapes take their tensor's values where nothing else holds them (each moved in, used once
    // here): a copy was ~2.5 % of seed-d's forward, on the calling thread alone.
    const auto rows = [&](Tensor&& t, long len) {
        const long width = static_cast<long>(t.size(2)) * N;
        return reshape(std::move(t), {1, len, width});
    };
    const bool first = o.batch_first();
    if (!first) mask = for_blocks_in_a_row(mask, s.N, s.h);
    // torch's q / sqrt(head_dim) before the product (tutorial_d::scaled_dot_product_attention)
    const Tensor q = (first ? p.q : rows(std::move(p.q), L)) / std::sqrt(static_cast<float>(s.head_dim));
    AttentionOptions a;
    a.who = o.who().c_str();
    a.dropout = o.training() ? o.dropout_p() : 0.f;  // torch: "if not training: dropout_p = 0.0"
    a.training = o.training();
    a.gen = o.generator();
    a.need_weights = false;
    const Tensor additive = mask.defined() && !mask.is_bool() ? mask.additive() : Tensor();
    if (mask.is_bool()) a.masked = &mask.masked();
    if (additive.defined()) a.additive = &additive;
    Tensor context = attention_on_packed_heads(q, first ? p.k : rows(std::move(p.k), S), first ? p.v : rows(std::move(p.v), S),
                                               first ? s.h : s.N * s.h, a);
    if (!context.defined()) return Tensor();
    expect_shape(o.who(), "out_proj_weight", o.out_proj_weight(), {s.E, s.E}, false);
    const Tensor merged = first ? context : reshape(std::move(context), {L, N, static_cast<long>(s.E)});
    return linear(merged, o.out_proj_weight(), o.out_proj_bias());  // (N, L, E) or (L, N, E)
}

// query (L, N, E) (or (N, L, E) with batch_first), key and value (S, N, ·): torch's function after
// its unbatched inputs got their batch axis.
MultiheadAttentionOutput batched_forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                         const MultiheadAttentionForwardFuncOptions& o) {
    const std::string& who = o.who();
    Sizes s = check_inputs(query, key, value, o);
    AttentionMask attn = checked_attn_mask(o.attn_mask(), s, who);
    AttentionMask padding = checked_key_padding_mask(o.key_padding_mask(), s, who);
    if (const Tensor out = on_packed_heads(query, key, value, o, s, attn, padding); out.defined()) return {out, Tensor()};

    // batch first inside: (N, L, features); a tensor given twice is transposed once, so the
    // in-projection still sees that q, k and v are one tensor (torch keeps the "is" too)
    const auto to_batch_first = [&](const Tensor& x) { return o.batch_first() ? x : transpose(x, 0, 1); };
    const Tensor q_in = to_batch_first(query);
    const Tensor k_in = same_tensor(key, query) ? q_in : to_batch_first(key);
    const Tensor v_in = same_tensor(value, key) ? k_in : same_tensor(value, query) ? q_in : to_batch_first(value);
    const InProjection p = project(q_in, k_in, v_in, o);  // each (N, ·, E)
    Tensor k = p.k, v = p.v;

    // add_bias_kv: one more key and value, learned; the masks keep it
    const auto one_more_key = [&] {
        attn = attn.with_one_more_key();
        padding = padding.with_one_more_key();
    };
    if (o.bias_k().defined()) {
        k = cat({k, expand(o.bias_k(), {s.N, 1, s.E})}, 1);
        v = cat({v, expand(o.bias_v(), {s.N, 1, s.E})}, 1);
        one_more_key();
    }

    // (N, L, E) -> (N, h, L, E/h); static_k / static_v (N·h, S, E/h) are already split, row n·h + head
    const long N = static_cast<long>(s.N), h = static_cast<long>(s.h), hd = static_cast<long>(s.head_dim);
    const Tensor q = split_heads(p.q, s.h);
    const auto heads_of_static = [&](const Tensor& t) { return reshape(t, {N, h, static_cast<long>(t.size(1)), hd}); };
    k = o.static_k().defined() ? heads_of_static(o.static_k()) : split_heads(k, s.h);
    v = o.static_v().defined() ? heads_of_static(o.static_v()) : split_heads(v, s.h);
    if (o.add_zero_attn()) {  // one more key and value of zeros
        const Tensor zeros = Tensor::zeros({s.N, s.h, 1, s.head_dim});
        k = cat({k, zeros}, 2);
        v = cat({v, zeros}, 2);
        one_more_key();
    }
    if (padding.defined()) padding = padding.reshaped({s.N, 1, 1, k.size(2)});  // every head and query
    const AttentionMask mask = attn.merged_with(padding);

    const float dropout_p = o.training() ? o.dropout_p() : 0.f;  // torch: "if not training: dropout_p = 0.0"
    const AttentionResult a =
        scaled_dot_product_attention(q, k, v, mask, dropout_p, o.training(), o.generator(), who.c_str(), o.need_weights());
    expect_shape(who, "out_proj_weight", o.out_proj_weight(), {s.E, s.E}, false);
    const Tensor out = linear(merge_heads(a.context), o.out_proj_weight(), o.out_proj_bias());  // (N, L, E)

    MultiheadAttentionOutput result{o.batch_first() ? out : transpose(out, 0, 1), Tensor()};
    if (o.need_weights()) result.attn_output_weights = o.average_attn_weights() ? mean(a.weights, {1}) : a.weights;
    return result;
}

}  // namespace

MultiheadAttentionOutput multi_head_attention_forward(
    const Tensor& query, const Tensor& key, const Tensor& value, std::size_t embed_dim_to_check,
    std::size_t num_heads, const Tensor& in_proj_weight, const Tensor& in_proj_bias, const Tensor& bias_k,
    const Tensor& bias_v, bool add_zero_attn, float dropout_p, const Tensor& out_proj_weight,
    const Tensor& out_proj_bias, bool training, const AttentionMask& key_padding_mask, bool need_weights,
    const AttentionMask& attn_mask) {
    return multi_head_attention_forward(
        query, key, value,
        MultiheadAttentionForwardFuncOptions(embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k,
                                             bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias)
            .training(training)
            .key_padding_mask(key_padding_mask)
            .need_weights(need_weights)
            .attn_mask(attn_mask));
}

}  // namespace xtgrad::nn::tutorial_d
