// Anomaly mode (autograd/anomaly.hpp): NaN/Inf found where it is born, with op, module and
// source location in the error.
#include "test_util.hpp"
#include "winter_games_small.hpp"

#include <xtgrad/nn/attention.hpp>

#include <cmath>
#include <limits>

using namespace xtgrad;

TEST_SUITE_BEGIN("debug");

TEST_CASE("anomaly mode is off by default: a NaN passes silently") {
    CHECK_FALSE(anomaly_detection_enabled());
    Tensor x = Tensor::from_vector({-1.f}, {1}, true);
    CHECK(std::isnan(log(x).item()));
}

TEST_CASE("forward: log of a negative number names the op, the module and where the node was made") {
    AnomalyGuard guard;
    Tensor x = Tensor::from_vector({1.f, -2.f}, {2}, true);
    ModuleScope scope("encoder.layers.0.enc_self_attn");
    test::expect_error([&] { (void)log(x); },
                      {"anomaly mode", "LogBackward", "NaN in forward", "element 1", "(2)",
                       "from inputs without NaN: it was born here", "in module 'encoder.layers.0.enc_self_attn'",
                       "autograd/ops/elementwise.cpp:"});
}

TEST_CASE("forward: a NaN an input already held is that input's, not born in its first consumer") {
    AnomalyGuard guard;
    Tensor x = Tensor::from_vector({4.f, std::nanf("")}, {2}, true).set_name("x");
    Tensor w = Tensor::from_vector({1.f, 2.f}, {2}, true);
    test::expect_error([&] { (void)(w * x); },
                      {"MulBackward produced NaN in forward (element 1 of its output of shape (2))",
                       "its input 1 'x' of shape (2) already held NaN (element 1)", "not from this op"});
    // made while anomaly mode was off: the op that consumes it names the input, unnamed
    Tensor y;
    {
        AnomalyGuard off(false);
        y = log(Tensor::from_vector({-1.f}, {1}));
    }
    test::expect_error([&] { (void)(y * 2.f); }, {"its input 0 of shape (1) already held NaN (element 0)"});
}

TEST_CASE("forward: ops are checked even when they record no node") {
    AnomalyGuard guard;
    Tensor x = Tensor::from_vector({-1.f}, {1});  // no grad anywhere
    test::expect_error([&] { (void)log(x); }, {"LogBackward", "NaN", "outside any module"});
}

TEST_CASE("forward: an infinity made from finite inputs is an error (exp overflow)") {
    AnomalyGuard guard;
    Tensor x = Tensor::from_vector({1.f, 100.f}, {2}, true);
    test::expect_error([&] { (void)exp(x); }, {"ExpBackward", "inf in forward", "from finite inputs"});
}

TEST_CASE("forward: a -inf mask fill, and what is computed from it, is not an anomaly") {
    AnomalyGuard guard;
    Tensor q = test::rnd({1, 2, 4, 8}, 1), k = test::rnd({1, 2, 4, 8}, 2), v = test::rnd({1, 2, 4, 8}, 3);
    const Mask causal{{false, true, true, true}, {false, false, true, true}, {false, false, false, true},
                      {false, false, false, false}};  // true above the diagonal = masked
    nn::AttentionOptions o;
    o.masked = &causal;  // fill defaults to -inf (tutorials A and D)
    o.scale = 0.35f;
    nn::AttentionResult a;
    CHECK_NOTHROW(a = nn::scaled_dot_product_attention(q, k, v, o));
    CHECK_NOTHROW(sum(a.context * a.context).backward());
    // Sums and scalings of -inf stay allowed: the infinity came in through an input.
    Tensor s = masked_fill(test::rnd({3}, 4), Mask{true, false, false}, -std::numeric_limits<float>::infinity());
    CHECK_NOTHROW((void)(s * 2.f + 1.f));
}

TEST_CASE("backward: an infinite gradient names the node, the input and the module") {
    Tensor x = Tensor::from_vector({0.f, 4.f}, {2}, true).set_name("x");
    Tensor y;
    {
        ModuleScope scope("decoder.layers.1.pos_ffn");
        y = sum(sqrt(x));  // sqrt(0) = 0 is fine; d sqrt / dx = 1 / (2 sqrt(0)) = inf is not
    }
    AnomalyGuard guard;
    test::expect_error([&] { y.backward(); },
                      {"anomaly mode", "SqrtBackward", "inf in backward", "input 0 'x'", "element 0",
                       "in module 'decoder.layers.1.pos_ffn'", "autograd/ops/elementwise.cpp:"});
}

TEST_CASE("backward: without anomaly mode the same infinity passes") {
    Tensor x = Tensor::from_vector({0.f}, {1}, true);
    sum(sqrt(x)).backward();
    CHECK(std::isinf(x.grad_array()(0)));
}

TEST_CASE("the tutorial C Transformer trains a step in anomaly mode without a finding") {
    AnomalyGuard guard;
    test::WinterGames w = test::winter_games_loss();
    CHECK_NOTHROW(w.loss.backward());
    CHECK(w.model->encoder->layers->operator[](0).enc_self_attn->W_Q->weight.has_grad());
}

TEST_CASE("AnomalyGuard restores the previous mode") {
    {
        AnomalyGuard on;
        CHECK(anomaly_detection_enabled());
        {
            AnomalyGuard off(false);
            CHECK_FALSE(anomaly_detection_enabled());
        }
        CHECK(anomaly_detection_enabled());
    }
    CHECK_FALSE(anomaly_detection_enabled());
}

TEST_SUITE_END();
