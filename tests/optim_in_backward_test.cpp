// The optimizer's step in backward (optim/in_backward.hpp): bit for bit the updates of
// zero_grad(); backward(); step(), and every combination it refuses.
#include <xtgrad/nn/layers.hpp>
#include <xtgrad/optim/in_backward.hpp>
#include <xtgrad/optim/optimizer.hpp>
#include <xtgrad/optim/schedule.hpp>
#include <xtgrad/threads/parallel.hpp>
#include "tests/test_util.hpp"

#include <cstring>
#include <functional>
#include <limits>

TEST_SUITE_BEGIN("optim");

using namespace xtgrad;
using namespace xtgrad::optim;

namespace {

// Two layers and an extra parameter that only odd steps use (a step without its gradient).
struct Net : nn::Module {
    std::shared_ptr<nn::Linear> fc1 = register_module("fc1", std::make_shared<nn::Linear>(5, 300));
    std::shared_ptr<nn::Linear> fc2 = register_module("fc2", std::make_shared<nn::Linear>(300, 3));
    Tensor odd = register_parameter("odd", Tensor::ones({3}, true));
    Tensor loss(int step) const {
        const Tensor x = test::rnd({4, 5}, static_cast<std::uint64_t>(100 + step));
        Tensor y = fc2->forward(gelu(fc1->forward(x)));
        if (step % 2 == 1) y = y * odd;
        return sum(y * y);
    }
};

bool same_bits(const Array& a, const Array& b) {
    return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

using MakeOptimizer = std::function<std::unique_ptr<Optimizer>(std::vector<Tensor>)>;

// Trains two copies of Net for `steps` steps, one stepping after backward and one in it, with the
// same lr schedule, and checks parameters, step counts and every state buffer bit for bit;
// returns whether all of them were.
bool check_identical(const MakeOptimizer& make, const std::vector<std::string>& keys, int steps = 5) {
    manual_seed(3);
    Net after;
    manual_seed(3);
    Net inside;
    std::unique_ptr<Optimizer> opt_after = make(after.parameters()), opt_inside = make(inside.parameters());
    LRScheduler sched_after(*opt_after, step_decay(opt_after->lr(), 2, 0.5));
    LRScheduler sched_inside(*opt_inside, step_decay(opt_inside->lr(), 2, 0.5));
    {
        OptimizerInBackward in_backward(*opt_inside);
        for (int s = 0; s < steps; ++s) {
            opt_after->zero_grad();
            sched_after.step();
            after.loss(s).backward();
            opt_after->step();

            sched_inside.step();  // before backward: each parameter reads the lr as its gradient completes
            inside.loss(s).backward();
        }
        for (const Tensor& p : inside.parameters()) CHECK_FALSE(p.has_grad());  // dropped after each step
    }
    bool identical = true;
    const std::vector<Tensor> pa = after.parameters(), pi = inside.parameters();
    REQUIRE(pa.size() == pi.size());
    for (std::size_t i = 0; i < pa.size(); ++i) {
        CAPTURE(pa[i].name());
        identical = identical && same_bits(pa[i].data(), pi[i].data());
        CHECK(same_bits(pa[i].data(), pi[i].data()));
        CHECK(opt_after->step_count(pa[i]) == opt_inside->step_count(pi[i]));
        for (const std::string& key : keys) {
            const Array *a = opt_after->state(pa[i], key), *b = opt_inside->state(pi[i], key);
            REQUIRE(a != nullptr);
            REQUIRE(b != nullptr);
            identical = identical && same_bits(*a, *b);
            CHECK(same_bits(*a, *b));
        }
    }
    CHECK(opt_inside->step_count(inside.odd) == (steps / 2));  // skipped in the steps without its gradient
    return identical;
}

// An optimizer whose step is not per parameter (as ZeroRedundancyOptimizer's collective).
class WholeStep : public Optimizer {
public:
    using Optimizer::Optimizer;
    void step() override {}

protected:
    void write_options(nlohmann::json&) const override {}
    void read_options(const nlohmann::json&) override {}
    std::vector<std::string> state_keys() const override { return {}; }
    std::vector<std::string> required_state_keys(const nlohmann::json&) const override { return {}; }
};

}  // namespace

TEST_CASE("step in backward: Adam, AdamW and SGD with momentum are bit-identical to stepping after backward") {
    CHECK(check_identical([](std::vector<Tensor> p) { return std::make_unique<Adam>(std::move(p), AdamOptions(1e-2)); },
                    {"exp_avg", "exp_avg_sq"}));
    CHECK(check_identical([](std::vector<Tensor> p) { return std::make_unique<Adam>(std::move(p), AdamOptions(1e-2).weight_decay(0.1)); },
                    {"exp_avg", "exp_avg_sq"}));
    CHECK(check_identical([](std::vector<Tensor> p) { return std::make_unique<AdamW>(std::move(p), AdamWOptions(1e-2)); },
                    {"exp_avg", "exp_avg_sq"}));
    CHECK(check_identical([](std::vector<Tensor> p) { return std::make_unique<SGD>(std::move(p), SGDOptions(1e-3).momentum(0.9)); },
                    {"momentum_buffer"}));
    CHECK(check_identical([](std::vector<Tensor> p) {
        return std::make_unique<SGD>(std::move(p), SGDOptions(1e-3).momentum(0.9).nesterov(true).weight_decay(0.01));
    }, {"momentum_buffer"}));
}

TEST_CASE("step in backward: bit-identical on two threads (Adam's update split over the pool)") {
    const int before = num_threads();
    set_num_threads(2);
    CHECK(check_identical([](std::vector<Tensor> p) { return std::make_unique<Adam>(std::move(p), AdamOptions(1e-2)); },
                    {"exp_avg", "exp_avg_sq"}, 3));
    set_num_threads(before);
    CHECK(num_threads() == before);
}

TEST_CASE("step in backward: state_dict is the optimizer's, and a run resumed from it continues alike") {
    manual_seed(4);
    Net net;
    Adam opt(net.parameters(), AdamOptions(1e-2));
    OptimizerInBackward in_backward(opt);
    net.loss(0).backward();
    const OptimizerState saved = opt.state_dict();
    CHECK(saved.tensors.size() == 3 * 4);  // step, exp_avg, exp_avg_sq of fc1's and fc2's weight and bias
    Adam other(net.parameters(), AdamOptions(1e-2));
    other.load_state_dict(saved);
    CHECK(other.step_count(net.fc1->weight) == 1);
    CHECK(same_bits(*other.state(net.fc1->weight, "exp_avg"), *opt.state(net.fc1->weight, "exp_avg")));
}

TEST_CASE("step in backward: keep_grad leaves this backward's gradient in .grad, and refuses adding onto it") {
    manual_seed(5);
    Net after;
    manual_seed(5);
    Net inside;
    SGD opt_after(after.parameters(), SGDOptions(1e-3));
    SGD opt_inside(inside.parameters(), SGDOptions(1e-3));
    OptimizerInBackward in_backward(opt_inside, InBackwardOptions().keep_grad(true));
    CHECK(in_backward.options().keep_grad());
    after.loss(0).backward();
    opt_after.step();
    inside.loss(0).backward();
    CHECK(same_bits(inside.fc1->weight.grad_array(), after.fc1->weight.grad_array()));
    CHECK(same_bits(inside.fc1->weight.data(), after.fc1->weight.data()));
    // a second backward without zero_grad would step on the sum of two backwards
    test::expect_error([&] { inside.loss(2).backward(); }, {"OptimizerInBackward", "keep_grad", "zero_grad()"});
    opt_inside.zero_grad();
    inside.loss(2).backward();
    CHECK(inside.fc1->weight.has_grad());
}

TEST_CASE("step in backward: step(), a second one, a shared parameter, and a sharded optimizer are refused") {
    Tensor w = Tensor::ones({4}, true).set_name("w");
    Adam opt({w});
    {
        OptimizerInBackward in_backward(opt);
        sum(w * w).backward();
        CHECK(opt.step_count(w) == 1);
        test::expect_error([&] { opt.step(); }, {"Adam.step", "steps in backward", "twice"});
        test::expect_error([&] { OptimizerInBackward again(opt); }, {"already steps in backward", "twice"});
        SGD other({w}, SGDOptions(0.1));
        test::expect_error([&] { OptimizerInBackward shared(other); }, {"'w'", "another optimizer", "twice"});
    }
    // gone: step() after backward works again, and backward no longer steps
    sum(w * w).backward();
    CHECK(opt.step_count(w) == 1);
    opt.step();
    CHECK(opt.step_count(w) == 2);

    WholeStep whole({w}, 0.1);
    test::expect_error([&] { OptimizerInBackward no(whole); }, {"no per-parameter step", "cannot step in backward"});
}

TEST_CASE("step in backward: clip_grad_norm and grad_norm are refused, saying why") {
    Tensor w = Tensor::ones({4}, true).set_name("w");
    Adam opt({w});
    OptimizerInBackward in_backward(opt);
    test::expect_error([&] { clip_grad_norm({w}, 1.0); }, {"clip_grad_norm", "'w'", "steps in backward", "before the step"});
    test::expect_error([&] { grad_norm({w}); }, {"grad_norm", "'w'"});
}

TEST_CASE("step in backward: a NaN gradient stops backward with an Error saying which parameters were updated") {
    Tensor a = Tensor::ones({2}, true).set_name("a"), b = Tensor::ones({2}, true).set_name("b");
    SGD opt({a, b}, SGDOptions(0.1));
    OptimizerInBackward in_backward(opt);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    // b's gradient completes first (the last op's input), finite; a's holds a NaN
    test::expect_error([&] { sum(a * Tensor::from_vector({nan, 1.f}, {2}) + b).backward(); },
                       {"SGD.step", "'a'", "nan", "earlier parameters were updated"});
    CHECK(b.data()(0) == doctest::Approx(0.9f));
    CHECK(a.data()(0) == 1.f);
}

TEST_CASE("step in backward: destroying the optimizer first removes the hooks") {
    Tensor w = Tensor::ones({3}, true);
    auto opt = std::make_unique<Adam>(std::vector<Tensor>{w});
    OptimizerInBackward in_backward(*opt);
    opt.reset();
    sum(w * w).backward();  // no step, no dangling optimizer
    CHECK(w.has_grad());
    CHECK(w.data()(0) == 1.f);
}

TEST_SUITE_END();
