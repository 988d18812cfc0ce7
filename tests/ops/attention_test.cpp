// attention_weights and dropout_matmul (autograd/ops/attention.cpp) and attention_context
// (autograd/ops/attention_context.cpp): gradchecks, the plain reference (the composition of
// separate ops they fuse), 1 vs 2 threads, bad input.
#include <xtgrad/nn/attention.hpp>
#include "tests/ops/attention_util.hpp"
#include "tests/test_util.hpp"

#include <limits>
#include <string>
#include <vector>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;
using test::kInf;
using test::rnd;
using test::some_masked;
using V = std::vector<Tensor>;

namespace {

// The inputs of one attention call and the options both paths read.
struct Case {
    Tensor q, k, v, additive;
    Mask masked;
    nn::AttentionOptions options(Generator& gen) const {
        nn::AttentionOptions o;
        o.scale = 0.35f;
        o.masked = &masked;
        o.fill = -kInf;
        o.additive = &additive;
        o.dropout = 0.3f;
        o.training = true;
        o.gen = &gen;
        return o;
    }
};

Case make_case(std::size_t B, std::size_t h, std::size_t Lq, std::size_t Lk, std::size_t d, std::uint64_t seed) {
    return {rnd({B, h, Lq, d}, seed), rnd({B, h, Lk, d}, seed + 1), rnd({B, h, Lk, d + 1}, seed + 2),
            rnd({Lq, Lk}, seed + 3, 0.5f), some_masked(B, Lq, Lk)};
}

// Context, weights and the gradients of q, k, v and the additive mask of one forward and
// backward (a loss on the context and on the weights, as a user who returns them may add).
std::vector<Array> run(const Case& c, bool fused) {
    nn::set_attention_fusion(fused ? nn::AttentionFusion::fused : nn::AttentionFusion::composed);
    Generator gen(42);
    const nn::AttentionResult r = nn::scaled_dot_product_attention(c.q, c.k, c.v, c.options(gen));
    nn::set_attention_fusion(nn::AttentionFusion::automatic);
    const Tensor rc = rnd(r.context.shape(), 7), rw = rnd(r.weights.shape(), 8);
    for (const Tensor* t : {&c.q, &c.k, &c.v, &c.additive}) Tensor(*t).zero_grad();
    sum(r.context * rc + sum(r.weights * rw)).backward();
    return {r.context.data(), r.weights.data(), c.q.grad_array(), c.k.grad_array(), c.v.grad_array(),
            c.additive.grad_array()};
}

// "" when both runs are bit-identical; else which result differs.
std::string differences(const std::vector<Array>& a, const std::vector<Array>& b) {
    const char* names[] = {"context", "weights", "dq", "dk", "dv", "d additive"};
    std::string diff;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!(a[i] == b[i])) diff += (diff.empty() ? "" : ", ") + std::string(names[i]);
    return diff;
}

// Context and the gradients of q, k, v and the additive mask with a loss on the context only
// (the caller of need_weights=false): composed, the two fused nodes, or attention_context.
enum class Path { composed, two_nodes, one_node };
std::vector<Array> run_context(const Case& c, Path path) {
    nn::set_attention_fusion(path == Path::composed ? nn::AttentionFusion::composed : nn::AttentionFusion::fused);
    Generator gen(42);
    nn::AttentionOptions o = c.options(gen);
    o.need_weights = path != Path::one_node;
    const nn::AttentionResult r = nn::scaled_dot_product_attention(c.q, c.k, c.v, o);
    nn::set_attention_fusion(nn::AttentionFusion::automatic);
    const std::string op = r.context.grad_fn()->op();
    REQUIRE(op == (path == Path::one_node ? "AttentionContextBackward" : path == Path::two_nodes ? "DropoutMatmulBackward" : "MatmulBackward"));
    CHECK(r.weights.defined() == (path != Path::one_node));
    for (const Tensor* t : {&c.q, &c.k, &c.v, &c.additive}) Tensor(*t).zero_grad();
    sum(r.context * rnd(r.context.shape(), 7)).backward();
    return {r.context.data(), Array(), c.q.grad_array(), c.k.grad_array(), c.v.grad_array(), c.additive.grad_array()};
}

}  // namespace

TEST_CASE("attention_weights: gradcheck with a broadcast mask, an additive mask and a scale") {
    const Mask masked = some_masked(2, 3, 5);
    CHECK(gradcheck([&](const V& x) { return attention_weights(x[0], x[1], 0.5f, &masked, -kInf, x[2]); },
                    {rnd({2, 2, 3, 4}, 1), rnd({2, 2, 5, 4}, 2), rnd({3, 5}, 3)}));
    // a finite fill (tutorials B and C), a (Lq, Lk) mask, no additive mask, 3-D inputs
    const Mask causal = Mask{{false, true, true}, {false, false, true}, {false, false, false}};
    CHECK(gradcheck([&](const V& x) { return attention_weights(x[0], x[1], 1.f, &causal, -1e9f); },
                    {rnd({4, 3, 2}, 4), rnd({4, 3, 2}, 5)}));
    CHECK(attention_weights(rnd({4, 3, 2}, 4), rnd({4, 3, 2}, 5), 1.f, nullptr, 0.f).grad_fn()->op() ==
          "AttentionWeightsBackward");
}

TEST_CASE("attention_weights: a mask that broadcasts along the keys fills whole rows, as masked_fill does") {
    // (B, Lq, 1): query 1 of batch 0 and query 2 of batch 1
    Mask rows = Mask{{false, true, false}, {false, false, true}};
    rows.reshape({2, 3, 1});
    const Tensor q = rnd({2, 3, 4}, 21), k = rnd({2, 5, 4}, 22);
    const Tensor w = attention_weights(q, k, 0.5f, &rows, -1e9f);
    const Tensor composed = softmax(masked_fill(matmul_nt(q, k, 0.5f), rows, -1e9f), -1);
    CHECK(test::max_abs_diff(w.data(), composed.data()) == 0.f);
    for (std::size_t j = 0; j < 5; ++j) CHECK(w.data()(0, 1, j) == 0.2f);  // every key filled alike
    CHECK(w.data()(0, 0, 0) != 0.2f);
    CHECK(gradcheck([&](const V& x) { return attention_weights(x[0], x[1], 0.5f, &rows, -1e9f); },
                    {rnd({2, 3, 4}, 23), rnd({2, 5, 4}, 24)}));
}

TEST_CASE("dropout_matmul: gradcheck in training mode with a fixed seed, and without dropout") {
    const auto dropped = [](const V& x) {
        Generator g(9);  // the same mask at every evaluation
        return dropout_matmul(x[0], x[1], 0.4f, true, g);
    };
    CHECK(gradcheck(dropped, {rnd({2, 3, 5}, 1), rnd({2, 5, 4}, 2)}));
    const auto plain = [](const V& x) { return dropout_matmul(x[0], x[1], 0.4f, false, default_generator()); };
    CHECK(gradcheck(plain, {rnd({2, 2, 3, 5}, 3), rnd({2, 2, 5, 4}, 4)}));
}

TEST_CASE("the fused ops equal the composition of separate ops bit for bit, values and gradients") {
    const Case c = make_case(2, 3, 6, 7, 4, 10);
    CHECK(differences(run(c, true), run(c, false)) == "");
    // and the dropout mask is the one dropout draws from the same generator
    Generator g1(5), g2(5);
    const Tensor w = softmax(rnd({2, 6, 7}, 11), -1), v = rnd({2, 7, 3}, 12);
    CHECK(dropout_matmul(w, v, 0.5f, true, g1).data() == matmul(dropout(w, 0.5f, true, g2), v).data());
}

TEST_CASE("the fused ops give bit-identical results on 1 and 2 threads") {
    // 2·8 blocks of 64×64 scores by d 32: well above for_each_slice's parallel threshold
    const Case c = make_case(2, 8, 64, 64, 32, 20);
    set_num_threads(1);
    const std::vector<Array> one = run(c, true);
    set_num_threads(2);
    const std::vector<Array> two = run(c, true);
    set_num_threads(1);
    CHECK(differences(one, two) == "");
}

TEST_CASE("attention_context: gradcheck with masks, an additive mask and dropout, and without either") {
    const Mask masked = some_masked(2, 3, 5);
    const auto full = [&](const V& x) {
        Generator g(9);  // the same dropout mask at every evaluation
        return attention_context(x[0], x[1], x[2], 0.5f, &masked, -kInf, x[3], 0.3f, true, g);
    };
    CHECK(gradcheck(full, {rnd({2, 2, 3, 4}, 1), rnd({2, 2, 5, 4}, 2), rnd({2, 2, 5, 3}, 3), rnd({3, 5}, 4)}));
    const auto plain = [](const V& x) {
        return attention_context(x[0], x[1], x[2], 1.f, nullptr, 0.f, Tensor(), 0.3f, false, default_generator());
    };
    CHECK(gradcheck(plain, {rnd({4, 3, 2}, 5), rnd({4, 6, 2}, 6), rnd({4, 6, 3}, 7)}));
}

TEST_CASE("attention_context equals the two fused nodes and the composition bit for bit, and keeps no weights") {
    const Case c = make_case(2, 3, 6, 7, 4, 10);
    const std::vector<Array> one = run_context(c, Path::one_node);
    CHECK(differences(one, run_context(c, Path::two_nodes)) == "");
    CHECK(differences(one, run_context(c, Path::composed)) == "");
    Generator gen(1);
    const Tensor y = attention_context(c.q, c.k, c.v, 0.35f, &c.masked, -kInf, c.additive, 0.3f, true, gen);
    // q, k, v, the two masks and dropout's bytes: nothing of shape (..., Lq, Lk) in floats
    CHECK(y.grad_fn()->saved_names() == std::vector<std::string>{"query", "key", "value", "mask", "additive", "dropout_mask"});
    CHECK(y.grad_fn()->saved_mask("dropout_mask").size() == 2 * 3 * 6 * 7);
}

TEST_CASE("attention_context gives bit-identical results on 1 and 2 threads") {
    const Case c = make_case(2, 8, 64, 64, 32, 20);
    set_num_threads(1);
    const std::vector<Array> one = run_context(c, Path::one_node);
    set_num_threads(2);
    const std::vector<Array> two = run_context(c, Path::one_node);
    set_num_threads(1);
    CHECK(differences(one, two) == "");
}

TEST_CASE("attention ops: bad shapes and probabilities are Errors naming the op and the shapes") {
    const Tensor q = rnd({2, 3, 4}), k = rnd({2, 5, 4}), v = rnd({2, 5, 6});
    test::expect_error([&] { attention_weights(q, rnd({3, 5, 4}), 1.f, nullptr, 0.f); },
                       {"attention_weights", "(2,3,4)", "(3,5,4)", "batch dims"});
    test::expect_error([&] { attention_weights(q, rnd({2, 5, 3}), 1.f, nullptr, 0.f); },
                       {"attention_weights", "(2,3,4)", "(2,5,3)", "d_k"});
    test::expect_error([&] { attention_weights(rnd({4}), k, 1.f, nullptr, 0.f); }, {"attention_weights", "(4)"});
    const Mask wrong = Mask::from_shape({4, 5});
    test::expect_error([&] { attention_weights(q, k, 1.f, &wrong, 0.f); },
                       {"attention_weights", "mask", "(4,5)", "(2,3,5)"});
    test::expect_error([&] { attention_weights(q, k, 1.f, nullptr, 0.f, rnd({2, 5, 3})); },
                       {"attention_weights", "additive", "(2,5,3)", "(2,3,5)"});
    const Tensor w = attention_weights(q, k, 1.f, nullptr, 0.f);
    test::expect_error([&] { dropout_matmul(w, rnd({2, 4, 6}), 0.f, false, default_generator()); },
                       {"dropout_matmul", "(2,3,5)", "(2,4,6)"});
    test::expect_error([&] { dropout_matmul(w, rnd({1, 5, 6}), 0.f, false, default_generator()); },
                       {"dropout_matmul", "(2,3,5)", "(1,5,6)", "batch dims"});
    test::expect_error([&] { dropout_matmul(w, v, 1.5f, true, default_generator()); }, {"dropout_matmul", "1.5"});
    const auto context = [&](const Tensor& kk, const Tensor& vv, float p) {
        return attention_context(q, kk, vv, 1.f, nullptr, 0.f, Tensor(), p, true, default_generator());
    };
    test::expect_error([&] { context(k, rnd({2, 4, 6}), 0.1f); }, {"attention_context", "(2,5,4)", "(2,4,6)", "length"});
    test::expect_error([&] { context(rnd({2, 5, 3}), v, 0.1f); }, {"attention_context", "(2,3,4)", "(2,5,3)", "d_k"});
    test::expect_error([&] { context(k, rnd({1, 5, 6}), 0.1f); }, {"attention_context", "(1,5,6)", "batch dims"});
    test::expect_error([&] { context(k, v, -0.5f); }, {"attention_context", "-0.5"});
    test::expect_error([&] { attention_context(q, k, v, 1.f, &wrong, 0.f, Tensor(), 0.f, false, default_generator()); },
                       {"attention_context", "mask", "(4,5)", "(2,3,5)"});
}

TEST_CASE("attention_weights: a fully masked row or a NaN row errors as softmax does") {
    const Tensor q = rnd({1, 2, 3}), k = rnd({1, 4, 3});
    Mask all = Mask::from_shape({2, 4});
    all.fill(false);
    for (std::size_t j = 0; j < 4; ++j) all(1, j) = true;
    test::expect_error([&] { attention_weights(q, k, 1.f, &all, -kInf); }, {"softmax", "row 1", "(1,2,4)", "entirely -inf"});
    Tensor nan_q = rnd({1, 2, 3});
    nan_q.mutable_data()(0, 0, 1) = std::numeric_limits<float>::quiet_NaN();
    test::expect_error([&] { attention_weights(nan_q, k, 1.f, nullptr, 0.f); }, {"softmax", "row 0", "NaN"});
}

TEST_CASE("attention ops: empty batches and zero-length sequences") {
    for (const Shape& qs : {Shape{0, 2, 3, 4}, Shape{1, 2, 0, 4}}) {
        const Tensor q = rnd(qs), k = rnd({qs[0], 2, 5, 4}), v = rnd({qs[0], 2, 5, 3});
        const Tensor w = attention_weights(q, k, 0.5f, nullptr, 0.f);
        Generator g(1);
        const Tensor y = dropout_matmul(w, v, 0.2f, true, g);
        CHECK(y.shape() == Shape{qs[0], 2, qs[2], 3});
        sum(y).backward();
        CHECK(q.grad_array().shape() == q.shape());
        CHECK(k.grad_array() == xt::zeros<float>(k.shape()));
    }
    for (const Shape& qs : {Shape{0, 2, 3, 4}, Shape{1, 2, 0, 4}}) {
        const Tensor q = rnd(qs), k = rnd({qs[0], 2, 5, 4}), v = rnd({qs[0], 2, 5, 3});
        Generator g(1);
        const Tensor y = attention_context(q, k, v, 0.5f, nullptr, 0.f, Tensor(), 0.2f, true, g);
        CHECK(y.shape() == Shape{qs[0], 2, qs[2], 3});
        sum(y).backward();
        CHECK(v.grad_array() == xt::zeros<float>(v.shape()));
    }
    // no keys: the weights are (.., Lq, 0) and the context zeros
    const Tensor q = rnd({1, 2, 4}), k = rnd({1, 0, 4}), v = rnd({1, 0, 3});
    const Tensor y = dropout_matmul(attention_weights(q, k, 1.f, nullptr, 0.f), v, 0.f, false, default_generator());
    CHECK(y.data() == xt::zeros<float>({1, 2, 3}));
}

TEST_SUITE_END();
