// Layer norm's output made again in backward (autograd/recompute.hpp, XTGRAD_LAYER_NORM_RECOMPUTE):
// the products that save it keep its recipe, so nothing keeps the values after forward; backward
// makes the same bits, and an in-place write is still caught as with kept values.
#include <xtgrad/autograd/grad.hpp>
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/autograd/speed_switches.hpp>
#include "test_util.hpp"

#include <doctest/doctest.h>

#include <xtensor/xview.hpp>

#include <memory>
#include <vector>

TEST_SUITE_BEGIN("engine");

using namespace xtgrad;

namespace recompute_test {

// The switch set for one test, restored after
struct RecomputeSwitch {
    bool before = detail::speed_switch_on(detail::kLayerNormRecomputeSwitch);
    explicit RecomputeSwitch(bool on) { detail::set_speed_switch(detail::kLayerNormRecomputeSwitch, on); }
    ~RecomputeSwitch() { detail::set_speed_switch(detail::kLayerNormRecomputeSwitch, before); }
};

struct Net {
    Tensor x = test::rnd({6, 8}, 1), w = test::rnd({8}, 2), b = test::rnd({8}, 3);
    Tensor W1 = test::rnd({5, 8}, 4), W2 = test::rnd({5, 8}, 5), b1 = test::rnd({5}, 6);
    std::weak_ptr<TensorValues> y_values;  // layer norm's output's, as made in forward
    // loss = Σ (y W1ᵀ + b1) ∘ (y W2ᵀ), y = layer_norm(x): two products save y; only they hold it
    Tensor loss(bool recompute_on) {
        const RecomputeSwitch on(recompute_on);
        const Tensor y = layer_norm(x * 1.f, w, b, 1e-5f);  // x · 1: layer norm's input is not a leaf
        y_values = y.impl_ptr()->values;
        return sum(mul(linear(y, W1, b1), linear(y, W2)));
    }
    std::vector<Array> grads() const { return {x.grad_array(), w.grad_array(), b.grad_array(), W1.grad_array(), W2.grad_array()}; }
};

TEST_CASE("layer norm's output saved by two products: freed after forward, made again once, the same gradients bit for bit") {
    Net kept, remade;
    Tensor loss = kept.loss(false);
    CHECK_FALSE(kept.y_values.expired());  // the products keep it
    loss.backward();
    loss = remade.loss(true);
    CHECK(remade.y_values.expired());  // nothing keeps it
    // both products read the one copy made again, the forward's bits
    const Node& sum_node = *loss.grad_fn();
    const Node& mul_node = *Tensor(sum_node.inputs()[0]).grad_fn();
    const Node& first = *Tensor(mul_node.inputs()[0]).grad_fn();
    const Node& second = *Tensor(mul_node.inputs()[1]).grad_fn();
    const Array& a = first.saved("input");
    CHECK(&a == &second.saved("input"));
    NoGradGuard no_grad;
    CHECK(test::max_abs_diff(a, layer_norm(remade.x * 1.f, remade.w, remade.b, 1e-5f).data()) == 0.f);
    loss.backward();
    const std::vector<Array> want = kept.grads(), got = remade.grads();
    for (std::size_t i = 0; i < want.size(); ++i) CHECK(test::max_abs_diff(got[i], want[i]) == 0.f);
}

TEST_CASE("layer norm's output made again: gradients of gradients (create_graph) are the kept values' bits") {
    std::vector<Array> second;
    for (const bool on : {false, true}) {
        Net net;
        const Tensor loss = net.loss(on);
        const std::vector<Tensor> g = grad({loss}, {net.W1, net.x}, {}, GradOptions().create_graph(true));
        sum(mul(g[0], g[0])).backward();
        second.push_back(net.x.grad_array());
    }
    CHECK(test::max_abs_diff(second[0], second[1]) == 0.f);
}

TEST_CASE("layer norm's output written in place after a product saved it: backward throws, held or freed") {
    for (const bool keep_handle : {true, false}) {
        CAPTURE(keep_handle);
        const RecomputeSwitch on(true);
        const Tensor x = test::rnd({3, 4}, 1), W = test::rnd({2, 4}, 2);
        Tensor y = layer_norm(x * 1.f, Tensor(), Tensor());
        const Tensor loss = sum(linear(y, W));
        y.mutable_data() *= 2.f;
        if (!keep_handle) y = Tensor();
        CHECK_THROWS_WITH_AS(loss.backward(), doctest::Contains("was modified by an inplace operation"), Error);
        CHECK_FALSE(W.has_grad());
    }
}

TEST_CASE("layer norm's input written in place: the product's backward names layer norm's node") {
    const RecomputeSwitch on(true);
    const Tensor W = test::rnd({2, 4}, 2);
    Tensor x = test::rnd({3, 4}, 1) * 1.f;
    const Tensor loss = sum(linear(layer_norm(x, Tensor(), Tensor()), W));
    x.mutable_data() += 1.f;
    CHECK_THROWS_WITH_AS(loss.backward(), doctest::Contains("LayerNormBackward"), Error);
}

TEST_CASE("layer norm's bias written in place before backward: both ways throw, naming it, as torch's saved bias") {
    for (const bool on : {false, true}) {
        CAPTURE(on);
        const RecomputeSwitch sw(on);
        Net net;
        const Tensor loss = net.loss(on);
        net.b.mutable_data() += 0.1f;  // an optimizer step on the bias alone
        CHECK_THROWS_WITH_AS(loss.backward(), doctest::Contains("'bias'"), Error);
    }
}

TEST_CASE("layer norm's input written in place, then a gradient that does not pass layer norm: only kept values allow it") {
    for (const bool on : {false, true}) {
        CAPTURE(on);
        const RecomputeSwitch sw(on);
        const Tensor W = test::rnd({2, 4}, 2);
        Tensor h = test::rnd({3, 4}, 1) * 1.f;
        const Tensor loss = sum(linear(layer_norm(h, Tensor(), Tensor()), W));
        h.mutable_data() += 1.f;
        if (on)  // the output cannot be made again: the Error says why and how to keep it
            CHECK_THROWS_WITH_AS(grad({loss}, {W}), doctest::Contains("XTGRAD_LAYER_NORM_RECOMPUTE=0 keeps it"), Error);
        else
            CHECK(grad({loss}, {W})[0].defined());
    }
}

TEST_CASE("an output kept after backward keeps nothing layer norm made it from") {
    for (const bool on : {false, true}) {
        CAPTURE(on);
        const RecomputeSwitch sw(on);
        const Tensor W = test::rnd({2, 4}, 2);
        std::weak_ptr<const TensorValues> input;
        Tensor kept;
        {
            const Tensor h = test::rnd({3, 4}, 1) * 1.f;
            input = h.values_ptr();
            const Tensor y = layer_norm(h, Tensor(), Tensor());
            sum(linear(y, W)).backward();
            kept = y.detach();
        }
        CHECK(input.expired());
        CHECK(kept.numel() == 12);
    }
}

TEST_CASE("layer norm's output written in place before a product saves it: the product keeps the values") {
    std::vector<Array> grads;
    for (const bool on : {false, true}) {
        const RecomputeSwitch sw(on);
        const Tensor x = test::rnd({3, 4}, 1), W = test::rnd({2, 4}, 2);
        std::weak_ptr<TensorValues> values;
        Tensor loss;
        {
            Tensor y = layer_norm(x * 1.f, Tensor(), Tensor());
            y.mutable_data() *= 3.f;  // no longer what layer norm made
            values = y.impl_ptr()->values;
            loss = sum(linear(y, W));
        }
        CHECK_FALSE(values.expired());
        loss.backward();
        grads.push_back(W.grad_array());
    }
    CHECK(test::max_abs_diff(grads[0], grads[1]) == 0.f);
}

TEST_CASE("a second pass after the first freed layer norm's node: W2's gradient with the switch off, an Error naming it on") {
    for (const bool on : {false, true}) {
        CAPTURE(on);
        const RecomputeSwitch sw(on);
        Net net;
        Tensor first, second;
        {
            const Tensor y = layer_norm(net.x * 1.f, net.w, net.b, 1e-5f);
            first = sum(linear(y, net.W1));
            second = sum(linear(y, net.W2));
        }
        first.backward();  // runs and frees layer norm's node
        // below y nothing runs; W2's gradient reads y, which the switch would make again from the freed node
        if (!on) {
            // second = Σ y W2ᵀ: each row of dW2 is y's column sums
            const Array y = layer_norm(net.x.detach(), net.w.detach(), net.b.detach(), 1e-5f).data();
            const Array col_sums = xt::sum(y, {0});
            const Array dW2 = grad({second}, {net.W2}, {}, GradOptions().retain_graph(true))[0].data();
            for (std::size_t r = 0; r < dW2.shape()[0]; ++r)
                CHECK(test::max_abs_diff(Array(xt::view(dW2, r)), col_sums) < 1e-5f);
        } else {
            CHECK_THROWS_WITH_AS(grad({second}, {net.W2}, {}, GradOptions().retain_graph(true)),
                                 doctest::Contains("XTGRAD_LAYER_NORM_RECOMPUTE=0 keeps it"), Error);
        }
        // either way, y's node is out of reach for an input below it
        CHECK_THROWS_WITH_AS(grad({second}, {net.x}), doctest::Contains("LayerNormBackward was freed by an earlier backward"),
                             Error);
    }
}

}  // namespace recompute_test

TEST_SUITE_END();
