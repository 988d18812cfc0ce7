// Optimizers and schedules (their PyTorch parity runs in parity_test.cpp).
#include "optim/optimizer.hpp"
#include "optim/schedule.hpp"
#include "tests/test_util.hpp"

#include <cmath>

using namespace xtgrad;
using namespace xtgrad::optim;

TEST_CASE("optimizers minimise a quadratic") {
    for (int which = 0; which < 3; ++which) {
        Tensor x = Tensor::from_vector({3.f, -2.f}, {2}, true);
        std::unique_ptr<Optimizer> opt;
        if (which == 0) opt = std::make_unique<SGD>(std::vector<Tensor>{x}, SGDOptions{.lr = 0.1, .momentum = 0.9});
        if (which == 1) opt = std::make_unique<Adam>(std::vector<Tensor>{x}, AdamOptions{.lr = 0.1});
        if (which == 2) opt = std::make_unique<AdamW>(std::vector<Tensor>{x}, AdamOptions{.lr = 0.1, .weight_decay = 0.01});
        for (int i = 0; i < 300; ++i) {
            opt->zero_grad();
            sum(x * x).backward();
            opt->step();
        }
        CHECK(std::abs(x.data()(0)) < 0.05f);
        CHECK(std::abs(x.data()(1)) < 0.05f);
    }
}

TEST_CASE("a parameter without a gradient is skipped, frozen ones are ignored") {
    Tensor a = Tensor::ones({2}, true), b = Tensor::ones({2}, true), frozen = Tensor::ones({2});
    Adam opt({a, b, frozen});
    CHECK(opt.params().size() == 2);
    sum(a).backward();
    opt.step();
    CHECK(opt.step_count(a) == 1);
    CHECK(opt.step_count(b) == 0);
    CHECK(b.data()(0) == 1.f);
    CHECK(opt.state(b, "exp_avg") == nullptr);
    CHECK(a.data()(0) == doctest::Approx(1.f - 1e-3f));  // Adam's first step moves by lr
}

TEST_CASE("clip_grad_norm scales the joint norm") {
    Tensor a = Tensor::ones({4}, true);
    sum(a * 3.f).backward();  // grad 3 everywhere, norm 6
    CHECK(clip_grad_norm({a}, 1.0) == doctest::Approx(6.0));
    CHECK(a.grad_array()(0) == doctest::Approx(0.5f).epsilon(1e-4));
}

TEST_CASE("learning-rate schedules") {
    Schedule noam = noam_schedule(512, 4000);
    CHECK(noam(1) == doctest::Approx(std::pow(512, -0.5) * std::pow(4000, -1.5)));
    CHECK(noam(4000) == doctest::Approx(std::pow(512, -0.5) * std::pow(4000, -0.5)));
    CHECK(noam(16000) == doctest::Approx(noam(4000) / 2));
    CHECK(linear_warmup(1e-3, 20)(5) == doctest::Approx(2.5e-4));
    CHECK(linear_warmup(1e-3, 20)(50) == doctest::Approx(1e-3));
    CHECK(step_decay(1.0, 10, 0.5)(10) == doctest::Approx(1.0));
    CHECK(step_decay(1.0, 10, 0.5)(11) == doctest::Approx(0.5));
    test::expect_error([] { noam_schedule(512, 0); }, {"noam_schedule", "warmup"});
    test::expect_error([&] { noam(0); }, {"steps count from 1"});
    test::expect_error([] { Adam({Tensor::ones({1}, true)}, AdamOptions{.betas = {1.0, 0.9}}); }, {"Adam", "betas"});
}
