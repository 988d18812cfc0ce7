// Weight gradients handed straight to the optimizer's step in backward (autograd/gradient_consumer.hpp):
// the same updates bit for bit, the NaN scan replaced by a proof, and every case where something
// else could see the gradient (or no proof holds) left to the usual path.
#include <xtgrad/autograd/anomaly.hpp>
#include <xtgrad/autograd/gradient_consumer.hpp>
#include <xtgrad/autograd/post_accumulate_hooks.hpp>
#include <xtgrad/nn/layers.hpp>
#include <xtgrad/optim/in_backward.hpp>
#include <xtgrad/optim/optimizer.hpp>
#include <xtgrad/threads/parallel.hpp>
#include "tests/test_util.hpp"

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

TEST_SUITE_BEGIN("optim");

using namespace xtgrad;
using namespace xtgrad::optim;

namespace {

// A Linear on 7 rows and a kernel-1 Conv1d on one batch item of length 7: each weight's gradient
// is one product over 7 rows, small operands for a big gradient, so its kernel proves it finite
// and hands it over. The biases' gradients are column sums: always stored.
struct Skinny : nn::Module {
    std::shared_ptr<nn::Linear> fc = register_module("fc", std::make_shared<nn::Linear>(64, 96));
    std::shared_ptr<nn::Conv1d> conv = register_module("conv", std::make_shared<nn::Conv1d>(96, 48, 1));
    bool fc_twice = false;  // a second use of fc: its weight then gets two contributions
    Tensor loss(int step) const {
        const Tensor x = test::rnd({7, 64}, static_cast<std::uint64_t>(300 + step));
        Tensor h = relu(fc->forward(x));  // (7, 96)
        if (fc_twice) h = h + relu(fc->forward(x * 0.5f));
        const Tensor y = conv->forward(reshape(transpose(h, 0, 1), {1, 96, 7}));  // (1, 48, 7)
        return sum(y * y);
    }
};

bool same_bits(const Array& a, const Array& b) {
    return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

using MakeOptimizer = std::function<std::unique_ptr<Optimizer>(std::vector<Tensor>)>;

// Trains two copies of Skinny, one stepping after backward and one in it, and checks every
// parameter and state buffer bit for bit. Returns how many gradients were handed over.
std::size_t check_identical(const MakeOptimizer& make, const std::vector<std::string>& keys, int steps = 4) {
    manual_seed(11);
    Skinny after;
    manual_seed(11);
    Skinny inside;
    std::unique_ptr<Optimizer> opt_after = make(after.parameters()), opt_inside = make(inside.parameters());
    const std::size_t before = detail::consumed_gradients();
    {
        OptimizerInBackward in_backward(*opt_inside);
        for (int s = 0; s < steps; ++s) {
            opt_after->zero_grad();
            after.loss(s).backward();
            opt_after->step();
            inside.loss(s).backward();
        }
    }
    const std::vector<Tensor> pa = after.parameters(), pi = inside.parameters();
    REQUIRE(pa.size() == pi.size());
    for (std::size_t i = 0; i < pa.size(); ++i) {
        CAPTURE(pa[i].name());
        CHECK(same_bits(pa[i].data(), pi[i].data()));
        CHECK(opt_after->step_count(pa[i]) == steps);
        CHECK(opt_inside->step_count(pi[i]) == steps);
        CHECK_FALSE(pi[i].has_grad());
        for (const std::string& key : keys) {
            const Array *a = opt_after->state(pa[i], key), *b = opt_inside->state(pi[i], key);
            REQUIRE(a != nullptr);
            REQUIRE(b != nullptr);
            CHECK(same_bits(*a, *b));
        }
    }
    return detail::consumed_gradients() - before;
}

// One backward of `model` with Adam in backward; returns how many gradients were handed over.
std::size_t consumed_in_one_backward(Skinny& model, Adam& opt) {
    OptimizerInBackward in_backward(opt);
    const std::size_t before = detail::consumed_gradients();
    model.loss(0).backward();
    return detail::consumed_gradients() - before;
}

}  // namespace

TEST_CASE("gradient consumer: Adam, AdamW and SGD take the weights' gradients from the kernels, bit for bit") {
    // two weights per backward handed over (the biases' column sums are stored as always)
    CHECK(check_identical([](std::vector<Tensor> p) { return std::make_unique<Adam>(std::move(p), AdamOptions(1e-2)); },
                          {"exp_avg", "exp_avg_sq"}) == 8);
    CHECK(check_identical(
              [](std::vector<Tensor> p) { return std::make_unique<AdamW>(std::move(p), AdamWOptions(1e-2).weight_decay(0.1)); },
              {"exp_avg", "exp_avg_sq"}) == 8);
    CHECK(check_identical(
              [](std::vector<Tensor> p) {
                  return std::make_unique<Adam>(std::move(p), AdamOptions(1e-2).weight_decay(0.01));  // L2 in the gradient
              },
              {"exp_avg", "exp_avg_sq"}) == 8);
    CHECK(check_identical(
              [](std::vector<Tensor> p) { return std::make_unique<SGD>(std::move(p), SGDOptions(0.05).momentum(0.9)); },
              {"momentum_buffer"}) == 8);
}

TEST_CASE("gradient consumer: bit-identical on two threads") {
    set_num_threads(2);
    const std::size_t consumed =
        check_identical([](std::vector<Tensor> p) { return std::make_unique<Adam>(std::move(p), AdamOptions(1e-2)); },
                        {"exp_avg", "exp_avg_sq"});
    set_num_threads(1);
    CHECK(consumed == 8);
}

TEST_CASE("gradient consumer: not offered where something else sees or adds to the gradient") {
    SUBCASE("a register_hook hook on the weight sees its gradient") {
        manual_seed(1);
        Skinny m;
        Adam opt(m.parameters(), AdamOptions(1e-2));
        int calls = 0;
        m.fc->weight.register_hook([&](const Array& g) {
            ++calls;
            return g;
        });
        CHECK(consumed_in_one_backward(m, opt) == 1);  // conv.weight only
        CHECK(calls == 1);
        CHECK(opt.step_count(m.fc->weight) == 1);
    }
    SUBCASE("another post-accumulate hook sees .grad before the step") {
        manual_seed(1);
        Skinny m;
        Adam opt(m.parameters(), AdamOptions(1e-2));
        bool saw_grad = false;
        register_post_accumulate_grad_hook(m.conv->weight, [&](TensorImpl& leaf) { saw_grad = leaf.grad != nullptr; });
        CHECK(consumed_in_one_backward(m, opt) == 1);  // fc.weight only
        CHECK(saw_grad);
        CHECK(opt.step_count(m.conv->weight) == 1);
    }
    SUBCASE("a weight used twice gets the sum of two gradients") {
        manual_seed(1);
        Skinny m;
        m.fc_twice = true;
        Adam opt(m.parameters(), AdamOptions(1e-2));
        CHECK(consumed_in_one_backward(m, opt) == 1);  // conv.weight only
        CHECK(opt.step_count(m.fc->weight) == 1);
    }
    SUBCASE("anomaly mode checks every gradient") {
        manual_seed(1);
        Skinny m;
        Adam opt(m.parameters(), AdamOptions(1e-2));
        AnomalyGuard anomaly;
        CHECK(consumed_in_one_backward(m, opt) == 0);
        CHECK(opt.step_count(m.fc->weight) == 1);
    }
    SUBCASE("keep_grad: the first backward's gradient is handed over and kept, the next one adds and is refused") {
        manual_seed(1);
        Skinny after;
        manual_seed(1);
        Skinny inside;
        Adam opt_after(after.parameters(), AdamOptions(1e-2)), opt_inside(inside.parameters(), AdamOptions(1e-2));
        OptimizerInBackward in_backward(opt_inside, InBackwardOptions().keep_grad(true));
        const std::size_t before = detail::consumed_gradients();
        after.loss(0).backward();
        opt_after.step();
        inside.loss(0).backward();
        CHECK(detail::consumed_gradients() - before == 2);
        REQUIRE(inside.fc->weight.has_grad());
        CHECK(same_bits(inside.fc->weight.grad_array(), after.fc->weight.grad_array()));
        CHECK(same_bits(inside.conv->weight.data(), after.conv->weight.data()));
        test::expect_error([&] { inside.loss(1).backward(); }, {"OptimizerInBackward", "keep_grad", "zero_grad()"});
    }
}

TEST_CASE("gradient consumer: without a proof of finiteness the gradient is stored and scanned as always") {
    SUBCASE("a NaN input: an Error naming the weight, which is not updated") {
        manual_seed(2);
        Tensor w = Tensor::ones({40, 30}, true).set_name("w");
        Adam opt({w}, AdamOptions(1e-2));
        OptimizerInBackward in_backward(opt);
        Array x = test::rnd({7, 30}, 5).data();
        x(3, 4) = std::numeric_limits<float>::quiet_NaN();
        const std::size_t before = detail::consumed_gradients();
        test::expect_error([&] { sum(linear(Tensor(x), w)).backward(); }, {"Adam.step", "'w'", "nan"});
        CHECK(detail::consumed_gradients() == before);
        CHECK(w.data()(0, 0) == 1.f);
        CHECK(opt.step_count(w) == 0);
    }
    SUBCASE("values too big to rule out an overflow: scanned, and an overflow found is an Error") {
        manual_seed(2);
        Tensor w = Tensor::ones({40, 30}, true).set_name("w");
        Adam opt({w}, AdamOptions(1e-2));
        OptimizerInBackward in_backward(opt);
        Array x = xt::zeros<float>({7, 30});
        Array c = xt::zeros<float>({7, 40});
        for (std::size_t t = 0; t < 7; ++t) x(t, 0) = 3e19f, c(t, 0) = 3e19f;  // dW(0, 0) = 7 · 9e38: inf
        const std::size_t before = detail::consumed_gradients();
        test::expect_error([&] { sum(linear(Tensor(x), w) * Tensor(c)).backward(); }, {"Adam.step", "'w'", "inf"});
        CHECK(detail::consumed_gradients() == before);
        CHECK(opt.step_count(w) == 0);
    }
    SUBCASE("the bound fails but the gradient is finite: stored, scanned and stepped as after backward") {
        const auto run = [](bool in_backward_step) {
            Tensor w = Tensor::ones({40, 30}, true).set_name("w");
            Adam opt({w}, AdamOptions(1e-2));
            std::unique_ptr<OptimizerInBackward> in_backward;
            if (in_backward_step) in_backward = std::make_unique<OptimizerInBackward>(opt);
            Array x = xt::zeros<float>({7, 30});
            Array c = xt::zeros<float>({7, 40});
            x(1, 0) = 1e19f;  // row 1 of x, row 0 of dy: no product of the two is ever summed
            c(0, 0) = 1e19f;
            sum(linear(Tensor(x), w) * Tensor(c)).backward();
            if (!in_backward_step) opt.step();
            return w.data();
        };
        const std::size_t before = detail::consumed_gradients();
        const Array inside = run(true);
        CHECK(detail::consumed_gradients() == before);
        CHECK(same_bits(inside, run(false)));
    }
    SUBCASE("set_check_finite(false): handed over unproven, as torch steps on whatever it gets") {
        Tensor w = Tensor::ones({40, 30}, true).set_name("w");
        Adam opt({w}, AdamOptions(1e-2));
        opt.set_check_finite(false);
        OptimizerInBackward in_backward(opt);
        Array x = xt::zeros<float>({7, 30});
        x(2, 5) = std::numeric_limits<float>::infinity();
        const std::size_t before = detail::consumed_gradients();
        sum(linear(Tensor(x), w)).backward();
        CHECK(detail::consumed_gradients() == before + 1);
        CHECK(std::isnan(w.data()(0, 5)));
    }
}

TEST_CASE("gradient consumer: product_provably_finite") {
    std::vector<float> a(7 * 3, 1e18f), b(7 * 4, 1e18f);
    CHECK(detail::product_provably_finite(a.data(), a.size(), b.data(), b.size(), 7, 1000));
    b[5] = 3e19f;  // 7 · 1e18 · 3e19 = 2.1e38 > FLT_MAX / 2 = 1.7e38
    CHECK_FALSE(detail::product_provably_finite(a.data(), a.size(), b.data(), b.size(), 7, 1000));
    b[5] = -1e19f;  // the sign does not matter: 7e37 < 1.7e38
    CHECK(detail::product_provably_finite(a.data(), a.size(), b.data(), b.size(), 7, 1000));
    a[20] = std::numeric_limits<float>::quiet_NaN();
    CHECK_FALSE(detail::product_provably_finite(a.data(), a.size(), b.data(), b.size(), 7, 1000));
    a[20] = -std::numeric_limits<float>::infinity();
    CHECK_FALSE(detail::product_provably_finite(a.data(), a.size(), b.data(), b.size(), 7, 1000));
    a[20] = 1.f;
    CHECK(detail::product_provably_finite(a.data(), a.size(), b.data(), b.size(), 7, 1000));
    // operands bigger than the product: scanning the product is cheaper, so no proof is tried
    CHECK_FALSE(detail::product_provably_finite(a.data(), a.size(), b.data(), b.size(), 7, 48));
    CHECK(detail::product_provably_finite(a.data(), a.size(), b.data(), b.size(), 7, 49));
}

TEST_SUITE_END();
