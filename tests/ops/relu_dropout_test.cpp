// relu_dropout (autograd/ops/relu_dropout.cpp): one node, bit for bit dropout(relu(x)).
#include "tests/test_util.hpp"

#include <xtgrad/autograd/func.hpp>

#include <cstring>
#include <limits>
#include <sstream>
#include <string>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;
using V = std::vector<Tensor>;

namespace {

bool same_bits(const Array& a, const Array& b) {
    // an empty array's data() may be null, which memcmp must not get even for 0 bytes (UBSan)
    return a.shape() == b.shape() && (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

std::string state_of(Generator& g) {
    std::ostringstream s;
    s << g.engine();
    return s.str();
}

// x with the values that tell a select from a product: -0, +-inf, NaN, tiny and huge ones
Tensor awkward_input(std::size_t n, std::uint64_t seed) {
    Tensor x = test::rnd({n}, seed);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float special[] = {-0.f, 0.f, test::kInf, -test::kInf, nan, 1e-38f, -1e-38f, 3e38f};
    for (std::size_t i = 0; i < n; i += 5) x.mutable_data()[i] = special[(i / 5) % 8];
    return x;
}

}  // namespace

TEST_CASE("relu_dropout equals dropout(relu(x)) bit for bit: values, draws, gradients, 1 and 2 threads") {
    for (const int threads : {1, 2}) {
        set_num_threads(threads);
        for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{31}, std::size_t{33}, std::size_t{4099}, std::size_t{70001}}) {
            for (const float p : {1e-45f, 0.1f, 0.5f, 0.9f, 0.9999999f}) {
                CAPTURE(threads);
                CAPTURE(n);
                CAPTURE(p);
                const Tensor x1 = awkward_input(n, n), x2 = awkward_input(n, n);
                Generator g1(9), g2(9);
                const Tensor fused = relu_dropout(x1, p, true, g1);
                const Tensor composed = dropout(relu(x2), p, true, g2);
                if (n > 0) CHECK(fused.grad_fn()->op() == "ReluDropoutBackward");
                CHECK(same_bits(fused.data(), composed.data()));
                CHECK(state_of(g1) == state_of(g2));  // the same draws, and no more
                // a gradient with NaN and inf, where relu or dropout cut and where both keep
                Tensor dy = awkward_input(n, n + 1);
                fused.backward(dy.data());
                composed.backward(dy.data());
                CHECK(same_bits(x1.grad_array(), x2.grad_array()));
                {  // no graph: the pass that keeps no bits
                    NoGradGuard no_grad;
                    Generator a(9), b(9);
                    const Tensor y = relu_dropout(x1, p, true, a);
                    CHECK_FALSE(y.grad_fn());
                    CHECK(same_bits(y.data(), dropout(relu(x2), p, true, b).data()));
                    CHECK(state_of(a) == state_of(b));
                }
            }
        }
    }
    set_num_threads(1);
}

TEST_CASE("relu_dropout on empty tensors: an empty result, nothing drawn, an empty gradient") {
    for (const Shape& shape : {Shape{0}, Shape{3, 0, 5}}) {
        const Tensor x1 = test::rnd(shape, 1), x2 = test::rnd(shape, 1);
        Generator g1(2), g2(2);
        const Tensor y1 = relu_dropout(x1, 0.5f, true, g1), y2 = dropout(relu(x2), 0.5f, true, g2);
        CHECK(y1.shape() == shape);
        CHECK(state_of(g1) == state_of(g2));
        sum(y1).backward();
        sum(y2).backward();
        CHECK(x1.grad_array().shape() == x2.grad_array().shape());
    }
}

TEST_CASE("relu_dropout adds into a running gradient as the composition does") {
    const Tensor x1 = awkward_input(300, 3), x2 = awkward_input(300, 3);
    Generator g1(4), g2(4);
    const Tensor y1 = relu_dropout(x1, 0.3f, true, g1) * 2.f + x1 * 3.f;
    const Tensor y2 = dropout(relu(x2), 0.3f, true, g2) * 2.f + x2 * 3.f;
    const Array dy = test::rnd({300}, 5).data();
    y1.backward(dy);
    y2.backward(dy);
    CHECK(same_bits(x1.grad_array(), x2.grad_array()));
}

TEST_CASE("relu_dropout in eval, with p = 0 and p = 1") {
    const Tensor x = test::rnd({4, 9}, 6);
    Generator g(1), untouched(1);
    const Tensor eval = relu_dropout(x, 0.5f, false, g);
    CHECK(eval.grad_fn()->op() == "ReluBackward");  // dropout is the identity: relu alone
    CHECK(same_bits(eval.data(), relu(x).data()));
    CHECK(relu_dropout(x, 0.f, true, g).grad_fn()->op() == "ReluBackward");
    CHECK(relu_dropout(x, -0.f, true, g).grad_fn()->op() == "ReluBackward");
    CHECK(state_of(g) == state_of(untouched));  // nothing drawn
    Generator a(2), b(2);
    const Tensor all = relu_dropout(x, 1.f, true, a);
    CHECK(same_bits(all.data(), dropout(relu(x), 1.f, true, b).data()));
    CHECK(xt::all(xt::equal(all.data(), 0.f)));
    CHECK(state_of(a) == state_of(b));
}

TEST_CASE("relu_dropout refuses what dropout refuses, and draws nothing then") {
    Generator g(3), untouched(3);
    const Tensor x = test::rnd({5}, 7);
    for (const float p : {-0.1f, 1.5f, std::numeric_limits<float>::quiet_NaN()})
        test::expect_error([&] { relu_dropout(x, p, true, g); }, {"relu_dropout", "probability must be in [0, 1]"});
    test::expect_error([&] { relu_dropout(Tensor(), 0.1f, true, g); }, {"relu_dropout", "the input"});
    CHECK(state_of(g) == state_of(untouched));
}

TEST_CASE("relu_dropout: gradcheck, gradgradcheck and jvpcheck") {
    // 111 elements: three full words of bits and a partial one; seed 4 puts none within the
    // finite differences' step of relu's kink (relu's own gradcheck, tests/memory, uses it too)
    const Tensor x = test::rnd({3, 37}, 4);
    const GradcheckFn f = [](const V& in) {
        Generator fixed(6);  // the same mask for every evaluation
        return relu_dropout(in[0], 0.3f, true, fixed);
    };
    CHECK(gradcheck(f, {x}));
    CHECK(gradgradcheck([&](const V& in) { return exp(f(in)); }, {x}));
    CHECK(jvpcheck(f, {x}));
}

TEST_CASE("relu_dropout's second-order and forward-mode results are the composition's") {
    const Tensor x = test::rnd({4, 40}, 9);
    const auto fused = [](const V& in) {
        Generator g(5);
        return exp(relu_dropout(in[0], 0.25f, true, g));
    };
    const auto composed = [](const V& in) {
        Generator g(5);
        return exp(dropout(relu(in[0]), 0.25f, true, g));
    };
    const Tensor t = test::rnd({4, 40}, 10);
    const auto [h1, hv1] = func::hvp([&](const V& in) { return sum(fused(in)); }, {x}, {t});
    const auto [h2, hv2] = func::hvp([&](const V& in) { return sum(composed(in)); }, {x}, {t});
    CHECK(same_bits(hv1[0].data(), hv2[0].data()));
    const auto [y1, j1] = func::jvp(fused, {x}, {t});
    const auto [y2, j2] = func::jvp(composed, {x}, {t});
    CHECK(same_bits(y1.data(), y2.data()));
    CHECK(same_bits(j1.data(), j2.data()));
}

TEST_CASE("relu_dropout under anomaly mode: an infinity it makes from finite inputs names its node") {
    AnomalyGuard guard;
    Tensor x = Tensor::full({64}, 3e38f, true);  // kept elements scaled by 2 overflow float
    Generator g(1);
    test::expect_error([&] { (void)relu_dropout(x, 0.5f, true, g); }, {"ReluDropoutBackward", "inf in forward", "from finite inputs"});
}

TEST_SUITE_END();
