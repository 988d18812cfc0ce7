// Every op's jvp rule (forward mode, autograd/forward_ad.hpp) is right: jvpcheck compares it
// with finite differences along a random tangent and with the double-backward jvp. One table
// per family, a case per entry point of autograd/ops.hpp (and the variants that take another
// path: broadcasting, masks, dropout, bias or none).
#include <xtgrad/autograd/forward_ad.hpp>
#include "tests/higher_order/op_cases.hpp"

#include <string>
#include <vector>

TEST_SUITE_BEGIN("forward_ad");

using namespace xtgrad;
using test::kInf;
using test::positive;
using test::rnd;
using V = std::vector<Tensor>;
using test::OpCase;
using test::away_from_zero;
using test::passing;

const auto by_jvpcheck = [](const GradcheckFn& f, const V& x) { return jvpcheck(f, x); };

TEST_CASE("jvpcheck: elementwise ops and activations") {
    const std::vector<OpCase> cases{
        {"add (broadcast)", [](const V& x) { return add(x[0], x[1]); }, {rnd({2, 3}, 1), rnd({3}, 2)}},
        {"sub", [](const V& x) { return sub(x[0], x[1]); }, {rnd({2, 3}, 3), rnd({2, 3}, 4)}},
        {"mul (broadcast)", [](const V& x) { return mul(x[0], x[1]); }, {rnd({2, 3}, 5), rnd({3}, 6)}},
        {"div", [](const V& x) { return div(x[0], x[1]); }, {rnd({2, 3}, 7), positive({2, 3}, 8)}},
        {"add, mul scalar, neg", [](const V& x) { return neg(add(mul(x[0], 3.f), 1.f)); }, {rnd({4}, 9)}},
        {"operators", [](const V& x) { return (2.f - x[0]) / (x[1] + 3.f) * 0.5f; }, {rnd({4}, 10), positive({4}, 11)}},
        {"pow", [](const V& x) { return pow(x[0], 3.f); }, {positive({4}, 12)}},
        {"pow 0", [](const V& x) { return pow(x[0], 0.f); }, {positive({4}, 13)}},
        {"exp", [](const V& x) { return exp(x[0]); }, {rnd({4}, 14)}},
        {"log", [](const V& x) { return log(x[0]); }, {positive({4}, 15)}},
        {"sqrt", [](const V& x) { return sqrt(x[0]); }, {positive({4}, 16)}},
        {"tanh", [](const V& x) { return tanh(x[0]); }, {rnd({4}, 17)}},
        {"relu", [](const V& x) { return relu(x[0]); }, {away_from_zero({6}, 18)}},
        {"gelu", [](const V& x) { return gelu(x[0]); }, {rnd({6}, 19)}},
        {"gelu tanh", [](const V& x) { return gelu(x[0], GeluApproximation::tanh); }, {rnd({6}, 20)}},
    };
    CHECK(passing(cases, by_jvpcheck) == cases.size());
}

TEST_CASE("jvpcheck: products") {
    const std::vector<OpCase> cases{
        {"matmul", [](const V& x) { return matmul(x[0], x[1]); }, {rnd({3, 4}, 21), rnd({4, 2}, 22)}},
        {"matmul batched, broadcast", [](const V& x) { return matmul(x[0], x[1]); }, {rnd({2, 3, 4}, 23), rnd({4, 2}, 24)}},
        {"matmul batch by batch", [](const V& x) { return matmul(x[0], x[1]); }, {rnd({2, 3, 4}, 25), rnd({2, 4, 2}, 26)}},
        {"matmul vector", [](const V& x) { return matmul(x[0], x[1]); }, {rnd({4}, 27), rnd({4, 3}, 28)}},
        {"matmul_nt", [](const V& x) { return matmul_nt(x[0], x[1], 0.5f); }, {rnd({2, 3, 4}, 29), rnd({2, 5, 4}, 30)}},
        {"linear", [](const V& x) { return linear(x[0], x[1], x[2]); }, {rnd({2, 3, 4}, 31), rnd({5, 4}, 32), rnd({5}, 33)}},
        {"linear no bias", [](const V& x) { return linear(x[0], x[1]); }, {rnd({3, 4}, 34), rnd({2, 4}, 35)}},
        {"linear_rows", [](const V& x) { return linear_rows(x[0], x[1], x[2], 2, 3); },
         {rnd({2, 4}, 36), rnd({6, 4}, 37), rnd({6}, 38)}},
        {"conv1d", [](const V& x) { return conv1d(x[0], x[1], x[2], 1); }, {rnd({2, 3, 5}, 39), rnd({4, 3, 3}, 40), rnd({4}, 41)}},
        {"conv1d kernel 1, no bias", [](const V& x) { return conv1d(x[0], x[1]); }, {rnd({1, 3, 4}, 42), rnd({2, 3, 1}, 43)}},
    };
    CHECK(passing(cases, by_jvpcheck) == cases.size());
}

TEST_CASE("jvpcheck: shape and selection") {
    const std::vector<OpCase> cases{
        {"transpose", [](const V& x) { return transpose(x[0], 0, 2); }, {rnd({2, 3, 4}, 44)}},
        {"permute", [](const V& x) { return permute(x[0], {2, 0, 1}); }, {rnd({2, 3, 4}, 45)}},
        {"reshape", [](const V& x) { return reshape(x[0], {4, -1}); }, {rnd({2, 3, 2}, 46)}},
        {"reshape a temporary", [](const V& x) { return reshape(exp(x[0]), {-1}); }, {rnd({2, 3}, 47)}},
        {"view", [](const V& x) { return view(x[0], {3, 2}); }, {rnd({2, 3}, 48)}},
        {"contiguous", [](const V& x) { return contiguous(x[0]); }, {rnd({2, 3}, 49)}},
        {"unsqueeze, squeeze", [](const V& x) { return squeeze(unsqueeze(x[0], 1), 1); }, {rnd({3, 2}, 50)}},
        {"expand", [](const V& x) { return expand(x[0], {3, 2, 4}); }, {rnd({2, 1}, 51)}},
        {"cat", [](const V& x) { return cat({x[0], x[1]}, 1); }, {rnd({2, 3}, 52), rnd({2, 1}, 53)}},
        {"split, chunk", [](const V& x) { return mul(split(x[0], 2, 1)[1], chunk(x[0], 2, 1)[0]); }, {rnd({2, 4}, 54)}},
        {"narrow", [](const V& x) { return narrow(x[0], 0, 1, 2); }, {rnd({4, 3}, 55)}},
        {"slice", [](const V& x) { return slice(x[0], 0, 0, 4, 2); }, {rnd({4, 3}, 56)}},
        {"index_select (repeats)", [](const V& x) { return index_select(x[0], 1, Ids({2, 0, 2})); }, {rnd({2, 3}, 57)}},
        {"masked_fill", [](const V& x) { return masked_fill(x[0], test::causal_mask_3x4(), 0.5f); }, {rnd({2, 3, 4}, 58)}},
        {"triu", [](const V& x) { return triu(x[0], 1); }, {rnd({3, 3}, 59)}},
        {"tril", [](const V& x) { return tril(x[0]); }, {rnd({3, 3}, 60)}},
        // no padding_idx: the double-backward reference gives the padding row no derivative (it is
        // backward's rule), while forward mode, as torch's, looks it up (forward_ad_test.cpp)
        {"embedding (repeats)", [](const V& x) { return embedding(x[0], Ids({{1, 3}, {1, 0}})); },
         {rnd({4, 3}, 61)}},
    };
    CHECK(passing(cases, by_jvpcheck) == cases.size());
}

TEST_CASE("jvpcheck: reductions") {
    const std::vector<OpCase> cases{
        {"sum all", [](const V& x) { return sum(x[0]); }, {rnd({2, 3}, 62)}},
        {"sum dims, keepdim", [](const V& x) { return sum(x[0], {1}, true); }, {rnd({2, 3}, 63)}},
        {"mean all", [](const V& x) { return mean(x[0]); }, {rnd({2, 3}, 64)}},
        {"mean dims", [](const V& x) { return mean(x[0], {0}); }, {rnd({2, 3}, 65)}},
        {"var", [](const V& x) { return var(x[0], {1}); }, {rnd({2, 4}, 66)}},
        {"var biased, keepdim", [](const V& x) { return var(x[0], {0, 1}, false, true); }, {rnd({2, 3}, 67)}},
        {"std", [](const V& x) { return stddev(x[0], {1}); }, {rnd({2, 4}, 68)}},
        {"max", [](const V& x) { return max(x[0], 1); }, {rnd({3, 4}, 69)}},
        {"max keepdim, dim 0", [](const V& x) { return max(x[0], 0, true); }, {rnd({3, 4}, 70)}},
    };
    CHECK(passing(cases, by_jvpcheck) == cases.size());
}

TEST_CASE("jvpcheck: softmax, normalisation, dropout and losses") {
    const std::vector<OpCase> cases{
        {"softmax", [](const V& x) { return softmax(x[0], -1); }, {rnd({2, 4}, 71)}},
        {"softmax dim 0", [](const V& x) { return softmax(x[0], 0); }, {rnd({3, 2}, 72)}},
        {"log_softmax", [](const V& x) { return log_softmax(x[0], 1); }, {rnd({2, 4}, 73)}},
        {"layer_norm", [](const V& x) { return layer_norm(x[0], x[1], x[2]); }, {rnd({2, 5}, 74), rnd({5}, 75), rnd({5}, 76)}},
        {"layer_norm plain", [](const V& x) { return layer_norm(x[0], Tensor(), Tensor()); }, {rnd({3, 4}, 77)}},
        {"dropout", [](const V& x) {
             Generator g(5);
             return dropout(x[0], 0.4f, true, g);
         },
         {rnd({3, 4}, 78)}},
        {"dropout eval", [](const V& x) {
             Generator g(5);
             return dropout(x[0], 0.4f, false, g);
         },
         {rnd({3, 4}, 79)}},
        {"relu_dropout", [](const V& x) {
             Generator g(5);
             return relu_dropout(x[0], 0.4f, true, g);
         },
         {rnd({3, 4}, 83)}},
        {"cross_entropy", [](const V& x) { return cross_entropy(x[0], Ids({2, 0, 1})); }, {rnd({3, 4}, 80)}},
        {"cross_entropy of a temporary", [](const V& x) { return cross_entropy(mul(x[0], 2.f), Ids({2, 0, 1})); },
         {rnd({3, 4}, 81)}},
        {"cross_entropy smoothing, ignore", [](const V& x) { return cross_entropy(x[0], Ids({2, -100, 1}), -100, 0.1f); },
         {rnd({3, 4}, 82)}},
    };
    CHECK(passing(cases, by_jvpcheck) == cases.size());
}

TEST_CASE("jvpcheck: the fused attention nodes") {
    const std::vector<OpCase> cases = test::attention_cases();
    CHECK(passing(cases, by_jvpcheck) == cases.size());
}

TEST_SUITE_END();
