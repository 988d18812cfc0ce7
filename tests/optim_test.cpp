// Optimizers and schedules (their PyTorch parity runs in parity_test.cpp).
#include <xtgrad/nn/layers.hpp>
#include <xtgrad/autograd/gradient_consumer.hpp>
#include <xtgrad/autograd/speed_switches.hpp>
#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/optim/in_backward.hpp>
#include <xtgrad/optim/optimizer.hpp>
#include <xtgrad/optim/schedule.hpp>
#include "tests/optim_test_util.hpp"
#include "tests/speed_switch_scope.hpp"
#include "tests/test_util.hpp"

#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>

TEST_SUITE_BEGIN("optim");

using namespace xtgrad;
using namespace xtgrad::optim;
using test::Quadratic;

TEST_CASE("optimizers minimise a quadratic") {
    for (int which = 0; which < 3; ++which) {
        Tensor x = Tensor::from_vector({3.f, -2.f}, {2}, true);
        std::unique_ptr<Optimizer> opt;
        if (which == 0) opt = std::make_unique<SGD>(std::vector<Tensor>{x}, SGDOptions(0.1).momentum(0.9));
        if (which == 1) opt = std::make_unique<Adam>(std::vector<Tensor>{x}, AdamOptions(0.1));
        if (which == 2) opt = std::make_unique<AdamW>(std::vector<Tensor>{x}, AdamWOptions(0.1).weight_decay(0.01));
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
    test::expect_error([] { Adam({Tensor::ones({1}, true)}, AdamOptions().betas({1.0, 0.9})); }, {"Adam", "betas"});
}

namespace {

// Runs `total` steps straight, and `split` steps + a state_dict round trip into a fresh
// optimizer + the rest: the parameters must be bit-identical.
template <class Make>
void check_round_trip(Make make, int split, int total) {
    Quadratic straight, resumed;
    std::unique_ptr<Optimizer> o1 = make(straight), o2 = make(resumed);
    for (int i = 0; i < total; ++i) straight.step(*o1, i >= 1);
    for (int i = 0; i < split; ++i) resumed.step(*o2, i >= 1);
    const OptimizerState saved = o2->state_dict();
    Quadratic copy;
    copy.a.mutable_data() = resumed.a.data();
    copy.b.mutable_data() = resumed.b.data();
    std::unique_ptr<Optimizer> o3 = make(copy);
    o3->set_lr(123);  // load_state_dict restores the lr too
    o3->load_state_dict(saved);
    CHECK(o3->lr() == o2->lr());
    for (int i = split; i < total; ++i) copy.step(*o3, i >= 1);
    CHECK(copy.a.data() == straight.a.data());
    CHECK(copy.b.data() == straight.b.data());
}

std::vector<std::string> names_of(const OptimizerState& s) {
    std::vector<std::string> names;
    for (const auto& [name, a] : s.tensors) names.push_back(name);
    return names;
}

}  // namespace

TEST_CASE("optimizer state_dict: torch's names, and a round trip continues bit-identically") {
    auto adam = [](Quadratic& q) { return std::make_unique<Adam>(std::vector<Tensor>{q.a, q.b}, AdamOptions(0.05).betas({0.8, 0.95})); };
    auto adamw = [](Quadratic& q) {
        return std::make_unique<AdamW>(std::vector<Tensor>{q.a, q.b}, AdamWOptions(0.05).weight_decay(0.1));
    };
    auto sgd = [](Quadratic& q) {
        return std::make_unique<SGD>(std::vector<Tensor>{q.a, q.b}, SGDOptions(0.01).momentum(0.9).nesterov(true));
    };
    check_round_trip(adam, 3, 7);
    check_round_trip(adamw, 1, 5);  // b has no state yet when saved
    check_round_trip(sgd, 4, 8);

    Quadratic q;
    std::unique_ptr<Optimizer> opt = adam(q);
    CHECK(opt->state_dict().tensors.empty());  // no step, no state (as torch)
    q.step(*opt, false);
    q.step(*opt, true);
    const OptimizerState s = opt->state_dict();
    CHECK(names_of(s) == std::vector<std::string>{"state.0.step", "state.0.exp_avg", "state.0.exp_avg_sq", "state.1.step",
                                                  "state.1.exp_avg", "state.1.exp_avg_sq"});
    CHECK(s.tensors[0].second.dimension() == 0);  // step: a 0-d float32, as torch >= 1.12 keeps it
    CHECK(s.tensors[0].second() == 2.f);
    CHECK(s.tensors[3].second() == 1.f);
    CHECK(s.tensors[1].second == *opt->state(q.a, "exp_avg"));
    CHECK(s.param_groups ==
          R"([{"amsgrad":false,"betas":[0.8,0.95],"eps":1e-08,"lr":0.05,"maximize":false,"params":[0,1],"weight_decay":0.0}])");
    Quadratic p;
    std::unique_ptr<Optimizer> sgd_opt = sgd(p);
    p.step(*sgd_opt, true);
    CHECK(names_of(sgd_opt->state_dict()) ==
          std::vector<std::string>{"state.0.step", "state.0.momentum_buffer", "state.1.step", "state.1.momentum_buffer"});
}

TEST_CASE("optimizer load_state_dict: what does not fit is an Error naming the entry, and changes nothing") {
    Quadratic q;
    Adam opt({q.a, q.b}, AdamOptions(0.05));
    q.step(opt, true);
    const OptimizerState good = opt.state_dict();
    auto with = [&](auto edit) {
        OptimizerState s = good;
        edit(s);
        return s;
    };
    Quadratic fresh;
    Adam target({fresh.a, fresh.b}, AdamOptions(0.5));
    auto load = [&](const OptimizerState& s) { return [&target, s] { target.load_state_dict(s); }; };
    test::expect_error(load(with([](OptimizerState& s) { s.tensors[1].second = Array(xt::zeros<float>({4})); })),
                       {"'state.0.exp_avg' has shape (4)", "parameter 0", "(3)"});
    test::expect_error(load(with([](OptimizerState& s) { s.tensors[0].first = "state.7.step"; })), {"state.7.step", "parameter 7"});
    test::expect_error(load(with([](OptimizerState& s) { s.tensors[0].first = "state.x.step"; })), {"state.x.step", "numeric"});
    test::expect_error(load(with([](OptimizerState& s) { s.tensors[2].first = "state.0.momentum_buffer"; })),
                       {"unexpected entry 'state.0.momentum_buffer'", "exp_avg"});
    test::expect_error(load(with([](OptimizerState& s) { s.tensors[0].second = Array(2.5f); })), {"state.0.step", "whole number"});
    test::expect_error(load(with([](OptimizerState& s) { s.tensors.erase(s.tensors.begin()); })), {"no 'state.0.step'"});
    test::expect_error(load(with([](OptimizerState& s) { s.param_groups = "[{"; })), {"param_groups is not JSON"});
    // nlohmann quotes the text it read last, bytes that are not UTF-8 raw: they reach the message escaped
    test::expect_error(load(with([](OptimizerState& s) { s.param_groups = "[\xff\xfe"; })),
                       {"param_groups is not JSON", "\\xff"});
    test::expect_error(load(with([](OptimizerState& s) { s.param_groups = R"([{"lr": 0.1, "params": [0]}])"; })),
                       {"saved group has 1 parameters, this optimizer has 2"});
    test::expect_error(load(with([](OptimizerState& s) { s.param_groups = R"([{"lr": 0.1, "params": [0, 1]}])"; })),
                       {"betas must be two numbers, got nothing"});  // an SGD group into Adam: no betas
    test::expect_error(load(with([](OptimizerState& s) {
                           s.param_groups = R"([{"lr": 0.1, "params": [0, 1], "betas": [1.5, 0.9], "eps": 1e-8, "weight_decay": 0}])";
                       })),
                       {"betas must be in [0, 1)"});
    CHECK(target.lr() == 0.5);  // nothing changed
    CHECK(target.state(fresh.a, "exp_avg") == nullptr);
}

TEST_CASE("optimizer load_state_dict: every field of a file is typed, bounded and checked as the constructor checks it") {
    Quadratic q;
    Adam opt({q.a, q.b}, AdamOptions(0.05));
    q.step(opt, true);
    const OptimizerState good = opt.state_dict();
    Quadratic fresh;
    Adam target({fresh.a, fresh.b}, AdamOptions(0.5).eps(1e-6));
    auto group = [&](const std::string& fields) {
        OptimizerState s = good;
        s.param_groups = R"([{"params": [0, 1], )" + fields + "}]";
        return [&target, s] { target.load_state_dict(s); };
    };
    const std::string rest = R"("betas": [0.9, 0.999], "weight_decay": 0)";
    // A string where a number belongs: an xtgrad::Error, not nlohmann's type_error.
    test::expect_error(group(R"("lr": "x", "eps": 1e-8, )" + rest), {"'lr' must be a number", "\"x\""});
    test::expect_error(group(R"("lr": 0.1, "eps": -1e-8, )" + rest), {"eps must be a finite number >= 0", "-1e-08"});
    test::expect_error(group(R"("lr": 0.1, "eps": 1e-8, "betas": ["a", 0.9], "weight_decay": 0)"), {"betas must be two numbers"});
    test::expect_error(group(R"("lr": 0.1, "eps": 1e-8, "betas": [0.9, 0.999], "weight_decay": -1)"),
                       {"weight_decay must be a finite number >= 0"});
    test::expect_error(group(R"("lr": 0.1, "eps": 1e-8, "amsgrad": 1, )" + rest), {"'amsgrad' must be true or false"});
    test::expect_error(group(R"("lr": 0.1, )" + rest), {"has no 'eps'"});

    // 200 000 nested lists: refused at the nesting bound, without recursing (it used to overflow the stack).
    OptimizerState deep = good;
    deep.param_groups = std::string(200000, '[') + std::string(200000, ']');
    test::expect_error([&] { target.load_state_dict(deep); }, {"param_groups nests lists and objects more than 8 deep"});

    // A parameter that took steps must bring its moments: without them it would resume from zeros.
    for (const char* missing : {"state.0.exp_avg", "state.0.exp_avg_sq"}) {
        OptimizerState s = good;
        std::erase_if(s.tensors, [&](const auto& entry) { return entry.first == missing; });
        test::expect_error([&] { target.load_state_dict(s); },
                           {"parameter 0 took 1 steps but", missing, "is missing"});
    }
    CHECK(target.lr() == 0.5);  // nothing changed by any of them
    CHECK(target.options.eps() == 1e-6);
    CHECK(target.state(fresh.a, "exp_avg") == nullptr);

    // SGD keeps a momentum buffer only with momentum: then it must be there.
    Quadratic p;
    SGD sgd({p.a, p.b}, SGDOptions(0.01).momentum(0.9));
    p.step(sgd, true);
    OptimizerState s = sgd.state_dict();
    std::erase_if(s.tensors, [](const auto& entry) { return entry.first == "state.1.momentum_buffer"; });
    Quadratic p2;
    SGD target_sgd({p2.a, p2.b}, SGDOptions(0.01).momentum(0.9));
    test::expect_error([&] { target_sgd.load_state_dict(s); }, {"'state.1.momentum_buffer' is missing"});
    SGD plain({p2.a, p2.b}, SGDOptions(0.01));
    p2.step(plain, true);
    Quadratic p3;
    SGD plain_target({p3.a, p3.b}, SGDOptions(0.5));
    CHECK_NOTHROW(plain_target.load_state_dict(plain.state_dict()));  // momentum 0: no buffer needed
}

TEST_CASE("optimizer options: chained setters with torch's defaults; AdamW's default weight_decay is 1e-2") {
    const SGDOptions sgd = SGDOptions(0.1).momentum(0.9).nesterov(true);
    CHECK(sgd.lr() == 0.1);
    CHECK(sgd.momentum() == 0.9);
    CHECK(sgd.dampening() == 0);
    CHECK(sgd.weight_decay() == 0);
    CHECK(sgd.nesterov());
    static_assert(!std::is_default_constructible_v<SGDOptions>);  // torch.optim.SGD needs an lr
    const AdamOptions adam;
    CHECK(adam.lr() == 1e-3);
    CHECK(adam.betas() == Betas{0.9, 0.999});
    CHECK(adam.eps() == 1e-8);
    CHECK(adam.weight_decay() == 0);
    // torch.optim.AdamW(params, lr=1e-4) decays by 1e-2; so does AdamWOptions(1e-4)
    CHECK(AdamWOptions(1e-4).weight_decay() == 1e-2);
    CHECK(AdamWOptions(1e-4).lr() == 1e-4);
    const AdamOptions from_w(AdamWOptions(2e-3).eps(1e-9));
    CHECK(from_w.lr() == 2e-3);
    CHECK(from_w.eps() == 1e-9);
    CHECK(from_w.weight_decay() == 1e-2);
    // and the optimizer reports what it runs with
    Tensor w = Tensor::ones({2}, true);
    CHECK(AdamW({w}, AdamWOptions(1e-4)).options.weight_decay() == 1e-2);
    CHECK(Adam({w}, AdamOptions(1e-4)).options.weight_decay() == 0);
}

TEST_CASE("optimizer options: the lines docs/architecture.md shows compile and set what they say") {
    nn::Linear model(3, 2);
    optim::Adam opt(model.parameters(), optim::AdamOptions(1e-4).betas({0.9, 0.98}).eps(1e-9));
    optim::SGD sgd(model.parameters(), optim::SGDOptions(0.1).momentum(0.9).nesterov(true));
    CHECK(opt.options.lr() == 1e-4);
    CHECK(opt.options.betas() == Betas{0.9, 0.98});
    CHECK(opt.options.eps() == 1e-9);
    CHECK(sgd.options.momentum() == 0.9);
    CHECK(sgd.options.nesterov());
}

TEST_CASE("optimizer options: out-of-range values are refused as torch refuses them") {
    Quadratic q;
    test::expect_error([&] { (void)Adam({q.a}, AdamOptions(0.1).eps(-1)); }, {"Adam: eps must be a finite number >= 0"});
    test::expect_error([&] { (void)AdamW({q.a}, AdamWOptions(0.1).weight_decay(-0.1)); }, {"AdamW: weight_decay"});
    test::expect_error([&] { (void)Adam({q.a}, AdamOptions(std::nan(""))); }, {"optimizer: lr must be a finite number >= 0, got nan"});
    test::expect_error([&] { (void)SGD({q.a}, SGDOptions(0.1).momentum(-0.5)); }, {"SGD: momentum must be a finite number >= 0"});
}

TEST_CASE("a step refuses a gradient of the wrong shape or with NaN, and changes nothing") {
    for (int kind = 0; kind < 2; ++kind) {
        Quadratic q;
        std::unique_ptr<Optimizer> opt;
        if (kind == 0) opt = std::make_unique<Adam>(std::vector<Tensor>{q.a, q.b}, AdamOptions(0.1));
        else opt = std::make_unique<SGD>(std::vector<Tensor>{q.a, q.b}, SGDOptions(0.1).momentum(0.9));
        const char* who = kind == 0 ? "Adam.step" : "SGD.step";
        q.a.set_name("a");
        q.b.set_name("b");
        q.step(*opt, true);
        const Array a_before = q.a.data(), b_before = q.b.data();
        const long steps = opt->step_count(q.a);

        opt->zero_grad();
        (sum(q.a * q.a) + sum(q.b * q.b * q.b)).backward();
        q.b.grad_array() = Array{1.f};  // shape (1) for a (2) parameter: would read past the buffer
        test::expect_error([&] { opt->step(); }, {who, "parameter 1 'b' has shape (1)", "nothing was updated"});

        q.b.grad_array() = Array(xt::zeros<float>(q.b.shape()));
        q.a.grad_array()(1) = std::numeric_limits<float>::quiet_NaN();
        test::expect_error([&] { opt->step(); }, {who, "parameter 0 'a'", "holds nan at element 1", "nothing was updated"});
        CHECK(test::max_abs_diff(q.a.data(), a_before) == 0.f);
        CHECK(test::max_abs_diff(q.b.data(), b_before) == 0.f);
        CHECK(opt->step_count(q.a) == steps);

        q.a.grad_array()(1) = std::numeric_limits<float>::infinity();
        test::expect_error([&] { opt->step(); }, {"holds inf at element 1"});
        opt->set_check_finite(false);  // torch's behaviour, on request
        CHECK_NOTHROW(opt->step());
        CHECK(opt->step_count(q.a) == steps + 1);
    }
}

TEST_CASE("a step refuses a parameter whose data was replaced by another shape since its state was made") {
    // Found by an attack: Adam's moments kept the old shape and the update ran past them (a heap
    // corruption); now an Error before anything changes, after backward and in it, as factors too.
    for (int mode = 0; mode < 3; ++mode) {  // 0: step(); 1: in backward; 2: in backward, the gradient as factors
        CAPTURE(mode);
        const test::SpeedSwitchScope as_factors(detail::kGradientAsFactorsSwitch, mode == 2);
        Tensor w = test::rnd({288, 300}, 1).requires_grad_(true).set_name("w");
        Tensor other = test::rnd({3}, 2).requires_grad_(true).set_name("other");
        Adam opt({other, w}, AdamOptions(1e-2));
        std::unique_ptr<OptimizerInBackward> in_backward;
        if (mode > 0) in_backward = std::make_unique<OptimizerInBackward>(opt);
        const auto step = [&](std::size_t in, std::uint64_t seed) {
            if (mode == 0) opt.zero_grad();
            (sum(linear(test::rnd({7, in}, seed), w) * 0.1f) + sum(other * other)).backward();
            if (mode == 0) opt.step();
        };
        const std::size_t factors_before = detail::consumed_as_factors();
        step(300, 3);
        const bool factored = mode == 2 && detail::product_on_skinny_tn_kernel(288, 300, 7);
        CHECK(detail::consumed_as_factors() - factors_before == (factored ? 1u : 0u));
        w.mutable_data() = test::rnd({320, 290}, 4).data();  // a product skinny_tn takes too
        const Array other_before = other.data(), w_before = w.data();
        test::expect_error([&] { step(290, 5); }, {"Adam.step", "parameter 1 'w' has shape (320,290)", "'exp_avg' shape (288,300)"});
        CHECK(test::max_abs_diff(w.data(), w_before) == 0.f);
        CHECK(opt.step_count(w) == 1);
        if (mode == 0) CHECK(test::max_abs_diff(other.data(), other_before) == 0.f);  // nothing was updated
    }
}

TEST_CASE("LRScheduler: the schedule's position round-trips") {
    Tensor x = Tensor::ones({1}, true);
    Adam opt({x}, AdamOptions(1));
    LRScheduler sched(opt, linear_warmup(1e-3, 10));
    for (int i = 0; i < 4; ++i) sched.step();
    CHECK(sched.last_step() == 4);
    CHECK(opt.lr() == doctest::Approx(4e-4));
    const std::string state = sched.state_dict();
    CHECK(state == R"({"_last_lr":[0.0004],"_step_count":5,"last_epoch":4})");
    Adam opt2({x}, AdamOptions(1));
    LRScheduler sched2(opt2, linear_warmup(1e-3, 10));
    sched2.load_state_dict(state);
    CHECK(sched2.last_step() == 4);
    CHECK(opt2.lr() == opt.lr());
    sched.step();
    sched2.step();
    CHECK(opt2.lr() == opt.lr());
    test::expect_error([&] { sched2.load_state_dict("{}"); }, {"LRScheduler", "last_epoch"});
    test::expect_error([&] { sched2.load_state_dict(R"({"last_epoch": -3, "_last_lr": [0.1]})"); }, {"LRScheduler", "-3"});
    test::expect_error([&] { (void)LRScheduler(opt, Schedule{}); }, {"LRScheduler", "empty"});
}

TEST_SUITE_END();
