// Every differentiable op's backward in ops (Node::DifferentiableFn) is right: its own backward
// (the op's second derivative) against finite differences of the first derivative
// (gradgradcheck), and, for the fused ops, its first-order gradients equal the fast kernels'.
#include <xtgrad/autograd/grad.hpp>
#include "tests/higher_order/op_cases.hpp"

#include <string>
#include <vector>

TEST_SUITE_BEGIN("higher_order");

using namespace xtgrad;
using test::kInf;
using test::positive;
using test::rnd;
using V = std::vector<Tensor>;
using test::OpCase;
using test::away_from_zero;
using test::passing;

const auto by_gradgradcheck = [](const GradcheckFn& f, const V& x) { return gradgradcheck(f, x); };

TEST_CASE("gradgradcheck: elementwise ops and activations") {
    const std::vector<OpCase> cases{
        {"add", [](const V& x) { return mul(add(x[0], x[1]), add(x[0], x[1])); }, {rnd({2, 3}, 1), rnd({3}, 2)}},
        {"sub", [](const V& x) { return mul(sub(x[0], x[1]), x[0]); }, {rnd({2, 3}, 3), rnd({2, 3}, 4)}},
        {"mul (broadcast)", [](const V& x) { return mul(x[0], x[1]); }, {rnd({2, 3}, 5), rnd({3}, 6)}},
        {"div", [](const V& x) { return div(x[0], x[1]); }, {rnd({2, 3}, 7), positive({2, 3}, 8)}},
        {"scalars", [](const V& x) { return mul(add(mul(x[0], 3.f), 1.f), neg(x[0])); }, {rnd({4}, 9)}},
        {"pow", [](const V& x) { return pow(x[0], 3.f); }, {positive({4}, 10)}},
        {"pow 0", [](const V& x) { return mul(pow(x[0], 0.f), x[0]); }, {positive({4}, 11)}},
        {"exp", [](const V& x) { return exp(x[0]); }, {rnd({4}, 12)}},
        {"log", [](const V& x) { return log(x[0]); }, {positive({4}, 13)}},
        {"sqrt", [](const V& x) { return sqrt(x[0]); }, {positive({4}, 14)}},
        {"tanh", [](const V& x) { return tanh(x[0]); }, {rnd({4}, 15)}},
        {"relu", [](const V& x) { return mul(relu(x[0]), x[0]); }, {away_from_zero({6}, 16)}},
        {"gelu", [](const V& x) { return gelu(x[0]); }, {rnd({6}, 17)}},
        {"gelu tanh", [](const V& x) { return gelu(x[0], GeluApproximation::tanh); }, {rnd({6}, 18)}},
    };
    CHECK(passing(cases, by_gradgradcheck) == cases.size());
}

TEST_CASE("gradgradcheck: products") {
    const std::vector<OpCase> cases{
        {"matmul", [](const V& x) { return matmul(x[0], x[1]); }, {rnd({3, 4}, 20), rnd({4, 2}, 21)}},
        {"matmul batched, broadcast", [](const V& x) { return matmul(x[0], x[1]); }, {rnd({2, 3, 4}, 22), rnd({4, 2}, 23)}},
        {"matmul vector", [](const V& x) { return matmul(x[0], x[1]); }, {rnd({4}, 24), rnd({4, 3}, 25)}},
        {"matmul_nt", [](const V& x) { return matmul_nt(x[0], x[1], 0.5f); }, {rnd({2, 3, 4}, 26), rnd({2, 5, 4}, 27)}},
        {"linear", [](const V& x) { return linear(x[0], x[1], x[2]); }, {rnd({2, 3, 4}, 28), rnd({5, 4}, 29), rnd({5}, 30)}},
        {"linear no bias", [](const V& x) { return mul(linear(x[0], x[1]), x[0].size(0) > 0 ? 1.f : 0.f); },
         {rnd({3, 4}, 31), rnd({2, 4}, 32)}},
        {"linear_rows", [](const V& x) { return linear_rows(x[0], x[1], x[2], 2, 3); },
         {rnd({2, 4}, 33), rnd({6, 4}, 34), rnd({6}, 35)}},
        {"conv1d", [](const V& x) { return conv1d(x[0], x[1], x[2], 1); }, {rnd({2, 3, 5}, 36), rnd({4, 3, 3}, 37), rnd({4}, 38)}},
    };
    CHECK(passing(cases, by_gradgradcheck) == cases.size());
}

TEST_CASE("gradgradcheck: shape, selection and reductions") {
    const std::vector<OpCase> cases{
        {"transpose", [](const V& x) { return mul(transpose(x[0], 0, 2), transpose(x[0], 0, 2)); }, {rnd({2, 3, 4}, 40)}},
        {"permute", [](const V& x) { return exp(permute(x[0], {2, 0, 1})); }, {rnd({2, 3, 4}, 41)}},
        {"reshape", [](const V& x) { return exp(reshape(x[0], {4, -1})); }, {rnd({2, 3, 2}, 42)}},
        {"(un)squeeze", [](const V& x) { return exp(squeeze(unsqueeze(x[0], 1), 1)); }, {rnd({3, 2}, 43)}},
        {"expand", [](const V& x) { return exp(expand(x[0], {3, 2, 4})); }, {rnd({2, 1}, 44)}},
        {"cat", [](const V& x) { return exp(cat({x[0], x[1]}, 1)); }, {rnd({2, 3}, 45), rnd({2, 1}, 46)}},
        {"split", [](const V& x) { return mul(split(x[0], 2, 1)[1], split(x[0], 2, 1)[0]); }, {rnd({2, 4}, 47)}},
        {"narrow, slice", [](const V& x) { return exp(add(narrow(x[0], 0, 1, 2), slice(x[0], 0, 0, 4, 2))); },
         {rnd({4, 3}, 48)}},
        {"index_select (repeats)", [](const V& x) { return exp(index_select(x[0], 1, Ids({2, 0, 2}))); }, {rnd({2, 3}, 49)}},
        {"sum", [](const V& x) { return exp(sum(x[0], {1}, true)); }, {rnd({2, 3}, 50)}},
        {"mean", [](const V& x) { return exp(mean(x[0], {0})); }, {rnd({2, 3}, 51)}},
        {"var", [](const V& x) { return var(x[0], {1}); }, {rnd({2, 4}, 52)}},
        {"var biased, keepdim", [](const V& x) { return exp(var(x[0], {0, 1}, false, true)); }, {rnd({2, 3}, 53)}},
        {"std", [](const V& x) { return stddev(x[0], {1}); }, {rnd({2, 4}, 54)}},
        {"max", [](const V& x) { return exp(max(x[0], 1)); }, {rnd({3, 4}, 55)}},
        {"masked_fill", [](const V& x) { return exp(masked_fill(x[0], test::causal_mask_3x4(), 0.5f)); }, {rnd({2, 3, 4}, 56)}},
        {"triu, tril", [](const V& x) { return exp(add(triu(x[0], 1), tril(x[0]))); }, {rnd({3, 3}, 57)}},
    };
    CHECK(passing(cases, by_gradgradcheck) == cases.size());
}

TEST_CASE("gradgradcheck: softmax, normalisation, lookup, dropout and losses") {
    const std::vector<OpCase> cases{
        {"softmax", [](const V& x) { return softmax(x[0], -1); }, {rnd({2, 4}, 60)}},
        {"softmax dim 0", [](const V& x) { return softmax(x[0], 0); }, {rnd({3, 2}, 61)}},
        {"log_softmax", [](const V& x) { return log_softmax(x[0], 1); }, {rnd({2, 4}, 62)}},
        {"layer_norm", [](const V& x) { return layer_norm(x[0], x[1], x[2]); }, {rnd({2, 5}, 63), rnd({5}, 64), rnd({5}, 65)}},
        {"layer_norm plain", [](const V& x) { return layer_norm(x[0], Tensor(), Tensor()); }, {rnd({3, 4}, 66)}},
        {"embedding (padding, repeats)", [](const V& x) { return exp(embedding(x[0], Ids({{1, 3}, {1, 0}}), 0)); },
         {rnd({4, 3}, 67)}},
        {"dropout", [](const V& x) {
             Generator g(5);
             return exp(dropout(x[0], 0.4f, true, g));
         },
         {rnd({3, 4}, 68)}},
        {"relu_dropout", [](const V& x) {
             Generator g(5);
             return exp(relu_dropout(x[0], 0.4f, true, g));
         },
         {rnd({3, 4}, 71)}},
        {"cross_entropy", [](const V& x) { return cross_entropy(x[0], Ids({2, 0, 1})); }, {rnd({3, 4}, 69)}},
        {"cross_entropy smoothing, ignore", [](const V& x) { return cross_entropy(x[0], Ids({2, -100, 1}), -100, 0.1f); },
         {rnd({3, 4}, 70)}},
    };
    CHECK(passing(cases, by_gradgradcheck) == cases.size());
}

TEST_CASE("gradgradcheck: the fused attention nodes") {
    const std::vector<OpCase> cases = test::attention_cases();
    CHECK(passing(cases, by_gradgradcheck) == cases.size());
}

TEST_CASE("the fused ops' backward in ops gives their kernels' first-order gradients") {
    const Mask& causal = test::causal_mask_3x4();
    const std::vector<OpCase> cases{
        {"attention_weights", [&](const V& x) { return attention_weights(x[0], x[1], 0.5f, &causal, -kInf, x[2]); },
         {rnd({2, 3, 2}, 100), rnd({2, 4, 2}, 101), rnd({3, 4}, 102)}},
        {"attention_context", [&](const V& x) {
             Generator g(3);
             return attention_context(x[0], x[1], x[2], 0.7f, &causal, -1e9f, x[3], 0.25f, true, g);
         },
         {rnd({2, 3, 2}, 103), rnd({2, 4, 2}, 104), rnd({2, 4, 3}, 105), rnd({3, 4}, 106)}},
        {"layer_norm", [](const V& x) { return layer_norm(x[0], x[1], x[2]); }, {rnd({3, 6}, 107), rnd({6}, 108), rnd({6}, 109)}},
        {"cross_entropy", [](const V& x) { return cross_entropy(x[0], Ids({3, -100, 1}), -100, 0.2f); }, {rnd({3, 5}, 110)}},
        {"conv1d", [](const V& x) { return conv1d(x[0], x[1], x[2], 2); }, {rnd({2, 3, 4}, 111), rnd({2, 3, 3}, 112), rnd({2}, 113)}},
        {"linear_rows", [](const V& x) { return linear_rows(x[0], x[1], x[2], 1, 2); }, {rnd({2, 3}, 114), rnd({4, 3}, 115), rnd({4}, 116)}},
    };
    for (const OpCase& c : cases) {
        INFO(c.name);
        Generator gen(1);
        const Tensor y = c.f(c.inputs);
        const Tensor r = randn(y.shape(), gen);
        const V kernel = grad({y}, c.inputs, {r}, GradOptions().retain_graph(true));
        const V in_ops = grad({y}, c.inputs, {r}, GradOptions().create_graph(true));
        for (std::size_t i = 0; i < kernel.size(); ++i) {
            INFO("input " << i);
            CHECK(test::max_abs_diff(kernel[i].data(), in_ops[i].data()) < 2e-5f);
        }
    }
}

TEST_SUITE_END();
