// Optimizers and schedules refuse what would reach a step as NaN or garbage: the lr, options
// changed after construction, schedules, loaded state, clip_grad_norm's bound; nothing changes then.
#include <xtgrad/autograd/speed_switches.hpp>
#include <xtgrad/optim/in_backward.hpp>
#include <xtgrad/optim/optimizer.hpp>
#include <xtgrad/optim/schedule.hpp>
#include "tests/optim_test_util.hpp"
#include "tests/speed_switch_scope.hpp"
#include "tests/test_util.hpp"

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

TEST_SUITE_BEGIN("optim");

using namespace xtgrad;
using namespace xtgrad::optim;
using test::kBadInf;
using test::kBadNaN;
using test::Quadratic;
using test::Unchanged;

namespace {
// Each options set on `opt` after construction, with fresh gradients: its step refuses it with
// `message` and leaves the parameters, lr and step counts as they were.
template <class Opt, class Options>
void expect_options_refused(Opt& opt, Quadratic& q, const std::vector<std::pair<Options, const char*>>& cases) {
    for (const auto& bad : cases) {  // not a structured binding: clang 14 cannot capture one (CAPTURE)
        const char* message = bad.second;
        CAPTURE(message);
        opt.options = bad.first;
        opt.zero_grad();
        (sum(q.a * q.a) + sum(q.b * q.b)).backward();
        const Unchanged before(opt);
        test::expect_error([&] { opt.step(); }, {message});
        before.check();
    }
}
}  // namespace

TEST_CASE("set_lr refuses a NaN, infinite or negative lr, naming the optimizer, and keeps the old one") {
    Quadratic q;
    Adam adam({q.a, q.b}, AdamOptions(0.05));
    SGD sgd({q.a}, SGDOptions(0.1));
    for (const double bad : {kBadNaN, kBadInf, -kBadInf, -5.0}) {
        CAPTURE(bad);
        test::expect_error([&] { adam.set_lr(bad); }, {"Adam.set_lr: lr must be a finite number >= 0, got"});
        test::expect_error([&] { sgd.set_lr(bad); }, {"SGD.set_lr: lr must be a finite number >= 0"});
        CHECK(adam.lr() == 0.05);
        CHECK(sgd.lr() == 0.1);
    }
    test::expect_error([&] { adam.set_lr(-5); }, {"got -5"});
    adam.set_lr(0);  // torch takes lr 0: the step moves nothing
    CHECK(adam.lr() == 0);
    q.step(adam, true);
    CHECK(q.a.data()(0) == 3.f);
}

TEST_CASE("a step checks the options changed since construction first: an Error naming the optimizer and the option, nothing updated") {
    Quadratic q;
    Adam adam({q.a, q.b}, AdamOptions(0.05));
    q.step(adam, true);
    const AdamOptions good = adam.options;
    const std::vector<std::pair<AdamOptions, const char*>> bad_adam = {
        {AdamOptions(good).betas({2.0, kBadNaN}), "Adam.step: betas must be in [0, 1), got (2, nan)"},
        {AdamOptions(good).betas({0.9, 1.0}), "Adam.step: betas must be in [0, 1)"},
        {AdamOptions(good).eps(-1e-8), "Adam.step: eps must be a finite number >= 0, got -1e-08"},
        {AdamOptions(good).weight_decay(kBadInf), "Adam.step: weight_decay must be a finite number >= 0, got inf"},
    };
    const Array m = *adam.state(q.a, "exp_avg");
    expect_options_refused(adam, q, bad_adam);
    CHECK(*adam.state(q.a, "exp_avg") == m);
    adam.options = AdamOptions(good).lr(kBadNaN);  // options.lr() is not the step's lr (lr() is): not read
    CHECK_NOTHROW(adam.step());

    AdamW adamw({q.a}, AdamWOptions(0.05));
    adamw.options.eps(kBadNaN);
    test::expect_error([&] { q.step(adamw, false); }, {"AdamW.step: eps must be a finite number >= 0, got nan"});
    CHECK(adamw.step_count(q.a) == 0);

    SGD sgd({q.a, q.b}, SGDOptions(0.1).momentum(0.9));
    q.step(sgd, true);
    expect_options_refused(sgd, q, std::vector<std::pair<SGDOptions, const char*>>{
         {SGDOptions(0.1).momentum(kBadNaN), "SGD.step: momentum must be a finite number >= 0, got nan"},
         {SGDOptions(0.1).momentum(0.9).dampening(kBadInf), "SGD.step: dampening must be finite, got inf"},
         {SGDOptions(0.1).momentum(0.9).nesterov(true).dampening(0.5), "SGD.step: nesterov needs momentum > 0 and dampening 0"}});
    sgd.options = SGDOptions(0.1).momentum(0.9).dampening(-3);  // torch takes any finite dampening
    CHECK_NOTHROW(sgd.step());
}

TEST_CASE("a step in backward checks the options first too, before any parameter is updated") {
    for (const bool as_factors : {false, true}) {  // the gradient stored, or handed over as its factors
        CAPTURE(as_factors);
        const test::SpeedSwitchScope factors(detail::kGradientAsFactorsSwitch, as_factors);
        Tensor w = test::rnd({288, 300}, 1).requires_grad_(true).set_name("w");
        Tensor other = test::rnd({3}, 2).requires_grad_(true).set_name("other");
        Adam opt({other, w}, AdamOptions(1e-2));
        OptimizerInBackward in_backward(opt);
        const auto backward = [&] { (sum(linear(test::rnd({7, 300}, 3), w) * 0.1f) + sum(other * other)).backward(); };
        backward();
        opt.options.betas({0.9, kBadNaN});
        const Unchanged before(opt);
        test::expect_error(backward, {"Adam.step: betas must be in [0, 1), got (0.9, nan)"});
        before.check();
        opt.options.betas({0.9, 0.999});
        backward();
        CHECK(opt.step_count(w) == 2);
    }
}

TEST_CASE("schedules check their arguments when built, and every lr they give") {
    test::expect_error([] { noam_schedule(kBadNaN, 10); }, {"noam_schedule: d_model must be a finite number > 0, got nan"});
    test::expect_error([] { noam_schedule(0, 10); }, {"noam_schedule: d_model must be a finite number > 0, got 0"});
    test::expect_error([] { noam_schedule(512, 10, -1); }, {"noam_schedule: factor must be a finite number >= 0, got -1"});
    test::expect_error([] { noam_schedule(512, 10, kBadInf); }, {"noam_schedule: factor", "inf"});
    test::expect_error([] { linear_warmup(-1e-3, 10); }, {"linear_warmup: base_lr must be a finite number >= 0, got -0.001"});
    test::expect_error([] { linear_warmup(kBadNaN, 10); }, {"linear_warmup: base_lr", "nan"});
    test::expect_error([] { step_decay(0.1, 1, -2); }, {"step_decay: gamma must be a finite number >= 0, got -2"});
    test::expect_error([] { step_decay(kBadNaN, 1, 0.5); }, {"step_decay: base_lr", "nan"});
    test::expect_error([] { step_decay(0.1, 0, 0.5); }, {"step_decay: step_size must be >= 1, got 0"});
    // What torch takes: a zero lr, factor or gamma, a growing gamma.
    CHECK(step_decay(0.1, 1, 0)(2) == 0);
    CHECK(linear_warmup(0, 5)(1) == 0);
    CHECK(noam_schedule(512, 10, 0)(3) == 0);
    CHECK(step_decay(1, 1, 2)(3) == 4);
    // Finite arguments whose lr overflows: an Error naming the schedule and the step.
    test::expect_error([] { step_decay(1, 1, 10)(400); }, {"step_decay: the lr at step 400 is inf, not a finite number >= 0"});
}

TEST_CASE("LRScheduler.step refuses a schedule's NaN, infinite or negative lr, leaving the lr and the step count") {
    Tensor x = Tensor::ones({1}, true);
    Adam opt({x}, AdamOptions(1));
    for (const double bad : {kBadNaN, kBadInf, -0.2}) {
        CAPTURE(bad);
        LRScheduler sched(opt, [bad](long step) { return step < 3 ? 0.01 * static_cast<double>(step) : bad; });
        sched.step();
        sched.step();
        test::expect_error([&] { sched.step(); }, {"LRScheduler.step: the schedule gave lr", "for step 3",
                                                   "the optimizer's lr stays 0.02 and the scheduler at step 2"});
        CHECK(opt.lr() == 0.02);
        CHECK(sched.last_step() == 2);
    }
    LRScheduler decay(opt, step_decay(1, 1, 10));  // a factory's schedule names itself
    opt.set_lr(0.5);
    for (int i = 0; i < 309; ++i) decay.step();
    test::expect_error([&] { decay.step(); }, {"step_decay: the lr at step 310 is inf"});
    CHECK(decay.last_step() == 309);
    CHECK(opt.lr() == std::pow(10.0, 308.0));
}

TEST_CASE("LRScheduler.load_state_dict: last_epoch a whole number in [0, kMaxStep], _last_lr finite >= 0; else nothing changes") {
    Tensor x = Tensor::ones({1}, true);
    Adam opt({x}, AdamOptions(0.5));
    LRScheduler sched(opt, linear_warmup(0.1, 0));
    sched.step();
    const auto load = [&](const std::string& text) { return [&sched, text] { sched.load_state_dict(text); }; };
    const std::string max = std::to_string(LRScheduler::kMaxStep);
    // nlohmann's get<long>() read 1e30 and 2^64 - 1 as other numbers, took 2.7 as 2, and LONG_MAX so that step() overflowed.
    for (const char* last : {"1e+30", "18446744073709551615", "2.7", "9223372036854775807", "-1", "\"3\"", "null", "2.0"}) {
        CAPTURE(last);
        test::expect_error(load(fmt::format(R"({{"last_epoch": {}, "_last_lr": [0.1]}})", last)),
                           {"LRScheduler: last_epoch must be a whole number in [0, 9007199254740992], got", last});
    }
    test::expect_error(load(fmt::format(R"({{"last_epoch": {}, "_last_lr": [0.1]}})", LRScheduler::kMaxStep + 1)),
                       {"last_epoch", "9007199254740993"});
    for (const char* lr : {"[-0.1]", "[]", "[0.1,0.2]", "0.1", "[\"x\"]"}) {
        CAPTURE(lr);
        test::expect_error(load(fmt::format(R"({{"last_epoch": 3, "_last_lr": {}}})", lr)),
                           {"LRScheduler: _last_lr must be a list of one finite number >= 0, got", lr});
    }
    test::expect_error(load("[1]"), {"LRScheduler: a state must be a JSON object"});
    test::expect_error(load("{"), {"LRScheduler: a state must be JSON"});
    test::expect_error(load(std::string(100000, '[') + std::string(100000, ']')), {"LRScheduler: the state nests"});
    CHECK(sched.last_step() == 1);  // nothing changed by any of them
    CHECK(opt.lr() == 0.1);

    // The bound is loadable, and step() stops there instead of overflowing.
    sched.load_state_dict(fmt::format(R"({{"last_epoch": {}, "_last_lr": [0.25]}})", max));
    CHECK(sched.last_step() == LRScheduler::kMaxStep);
    CHECK(opt.lr() == 0.25);
    test::expect_error([&] { sched.step(); }, {"LRScheduler.step: the scheduler is at step 9007199254740992, the last it counts to"});
    CHECK(sched.last_step() == LRScheduler::kMaxStep);
    CHECK(opt.lr() == 0.25);
}

TEST_CASE("optimizer load_state_dict refuses NaN or infinite buffers and a negative exp_avg_sq, naming the entry") {
    Quadratic q;
    Adam opt({q.a, q.b}, AdamOptions(0.05));
    q.step(opt, true);
    const OptimizerState good = opt.state_dict();
    Quadratic fresh;
    Adam target({fresh.a, fresh.b}, AdamOptions(0.5));
    const auto with = [&](const std::string& entry, std::size_t element, float value) {
        OptimizerState s = good;
        for (auto& [name, a] : s.tensors)
            if (name == entry) a.data()[element] = value;
        return [&target, s] { target.load_state_dict(s); };
    };
    test::expect_error(with("state.0.exp_avg_sq", 1, -1.f),
                       {"optimizer state: 'state.0.exp_avg_sq' (parameter 0) holds -1 at element 1", "mean of squares"});
    test::expect_error(with("state.1.exp_avg_sq", 0, std::nanf("")), {"'state.1.exp_avg_sq' (parameter 1) holds nan at element 0"});
    test::expect_error(with("state.0.exp_avg", 2, std::numeric_limits<float>::infinity()),
                       {"'state.0.exp_avg' (parameter 0) holds inf at element 2", "must be finite"});
    test::expect_error(with("state.0.step", 0, std::nanf("")), {"'state.0.step' must be one whole number in [1, 16777216]"});
    test::expect_error(with("state.0.step", 0, -3.f), {"'state.0.step' must be one whole number in [1, 16777216]", "-3"});
    CHECK(target.lr() == 0.5);  // nothing changed
    CHECK(target.state(fresh.a, "exp_avg") == nullptr);
    CHECK_NOTHROW(with("state.0.exp_avg", 0, -7.f)());  // a first moment may be negative

    Quadratic p;
    SGD sgd({p.a, p.b}, SGDOptions(0.01).momentum(0.9));
    p.step(sgd, true);
    OptimizerState s = sgd.state_dict();
    s.tensors[1].second.data()[0] = std::nanf("");
    SGD sgd_target({p.a, p.b}, SGDOptions(0.01).momentum(0.9));
    test::expect_error([&] { sgd_target.load_state_dict(s); }, {"'state.0.momentum_buffer' (parameter 0) holds nan"});
    CHECK(sgd_target.state(p.a, "momentum_buffer") == nullptr);
}

TEST_CASE("clip_grad_norm: a NaN or negative max_norm is an Error changing nothing; 0 and +Inf as torch") {
    Tensor a = Tensor::ones({4}, true).set_name("a"), b = Tensor::ones({2}, true).set_name("b");
    const auto backward = [&] {
        a.zero_grad();
        b.zero_grad();
        (sum(a * 3.f) + sum(b * 4.f)).backward();  // norm sqrt(4·9 + 2·16) = sqrt(68)
    };
    backward();
    for (const double bad : {-1.0, kBadNaN, -kBadInf}) {
        CAPTURE(bad);
        test::expect_error([&] { clip_grad_norm({a, b}, bad); }, {"clip_grad_norm: max_norm must be >= 0 (not NaN), got"});
        CHECK(a.grad_array()(0) == 3.f);  // -1 used to flip the gradient's sign
        CHECK(b.grad_array()(0) == 4.f);
    }
    test::expect_error([&] { clip_grad_norm({a, b}, -1); }, {"got -1", "no gradient was changed"});
    CHECK(clip_grad_norm({a, b}, kBadInf) == doctest::Approx(std::sqrt(68.0)));  // no bound: unchanged
    CHECK(a.grad_array()(0) == 3.f);
    clip_grad_norm({a, b}, 0);  // torch: every gradient zeroed
    CHECK(a.grad_array()(0) == 0.f);
    CHECK(b.grad_array()(1) == 0.f);
}

TEST_CASE("clip_grad_norm: error_if_nonfinite refuses a NaN or infinite norm naming it; off, torch's scaling") {
    Tensor a = Tensor::ones({3}, true).set_name("a"), b = Tensor::ones({2}, true).set_name("b");
    for (const float bad : {std::numeric_limits<float>::infinity(), std::nanf("")}) {
        CAPTURE(bad);
        a.zero_grad();
        b.zero_grad();
        (sum(a * 3.f) + sum(b * 4.f)).backward();
        b.grad_array()(1) = bad;
        const Array ga = a.grad_array(), gb = b.grad_array();
        test::expect_error([&] { clip_grad_norm({a, b}, 1.0, ClipGradNormOptions().error_if_nonfinite(true)); },
                           {"clip_grad_norm: the total norm of the gradients is", "parameter 1 'b' holds", "at element 1",
                            "error_if_nonfinite is set, so no gradient was changed"});
        CHECK(a.grad_array() == ga);
        CHECK(b.grad_array()(0) == gb(0));
        // Off (torch's default): an infinite norm scales by 0 (inf·0 = NaN), a NaN norm by NaN.
        const double norm = clip_grad_norm({a, b}, 1.0);
        CHECK(!std::isfinite(norm));
        if (std::isinf(bad)) {
            CHECK(a.grad_array()(0) == 0.f);
            CHECK(b.grad_array()(0) == 0.f);
        } else {
            CHECK(std::isnan(a.grad_array()(0)));
        }
        CHECK(std::isnan(b.grad_array()(1)));
    }
    Tensor c = Tensor::ones({2}, true);
    sum(c * 2.f).backward();
    CHECK(clip_grad_norm({c}, 10.0, ClipGradNormOptions().error_if_nonfinite(true)) == doctest::Approx(std::sqrt(8.0)));
    CHECK(c.grad_array()(0) == 2.f);  // under the bound: unchanged
}

TEST_SUITE_END();
