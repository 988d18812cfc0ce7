// ZeroRedundancyOptimizer's parts that need no mpirun: the partition, and the wrapper in a world
// of one process, where it must be plain Adam exactly (steps, state_dict, load_state_dict and
// its errors). The 2- and 3-process runs are tests/distributed/run_zero_test.sh.
#include "nn/layers.hpp"
#include "nn/parallel/zero_optimizer.hpp"
#include "test_util.hpp"

TEST_SUITE_BEGIN("distributed");

using namespace xtgrad;
using nn::parallel::partition_parameters;
using nn::parallel::ZeroRedundancyOptimizer;

namespace {

struct Net : nn::Module {
    std::shared_ptr<nn::Linear> fc1 = register_module("fc1", std::make_shared<nn::Linear>(3, 6));
    std::shared_ptr<nn::Linear> fc2 = register_module("fc2", std::make_shared<nn::Linear>(6, 2));
    Tensor forward(const Tensor& x) const { return fc2->forward(relu(fc1->forward(x))); }
};

const optim::AdamOptions kAdam{.lr = 1e-2, .betas = {0.9, 0.98}, .eps = 1e-9};

void train(Net& net, optim::Optimizer& opt, int steps) {
    for (int s = 0; s < steps; ++s) {
        opt.zero_grad();
        sum(net.forward(test::rnd({4, 3}, static_cast<std::uint64_t>(s)))).backward();
        opt.step();
    }
}

}  // namespace

TEST_CASE("partition_parameters: largest first, each to the least loaded rank; every world size") {
    // sizes 18, 6, 12, 2 (fc1.weight, fc1.bias, fc2.weight, fc2.bias) on 2 ranks: 18 -> 0, 12 -> 1, 6 -> 1, 2 -> 0
    CHECK(partition_parameters({18, 6, 12, 2}, 2) == std::vector<int>{0, 1, 1, 0});
    CHECK(partition_parameters({18, 6, 12, 2}, 3) == std::vector<int>{0, 2, 1, 2});
    CHECK(partition_parameters({5, 5, 5, 5}, 2) == std::vector<int>{0, 1, 0, 1});  // ties by index, then rank
    CHECK(partition_parameters({4}, 3) == std::vector<int>{0});                     // ranks without a parameter
    CHECK(partition_parameters({}, 2).empty());
    test::expect_error([] { partition_parameters({1}, 0); }, {"ZeroRedundancyOptimizer", "world size", "0"});
}

TEST_CASE("ZeroRedundancyOptimizer in one process is plain Adam: the same weights and the same state_dict") {
    manual_seed(3);
    Net a;
    manual_seed(3);
    Net b;
    optim::Adam adam(a.parameters(), kAdam);
    ZeroRedundancyOptimizer zero(b.parameters(), kAdam);
    CHECK(zero.owned().size() == 4);
    train(a, adam, 3);
    train(b, zero, 3);
    for (std::size_t i = 0; i < 4; ++i) CHECK(test::max_abs_diff(a.parameters()[i].data(), b.parameters()[i].data()) == 0.f);
    const optim::OptimizerState sa = adam.state_dict(), sz = zero.state_dict();
    CHECK(sz.param_groups == sa.param_groups);
    REQUIRE(sz.tensors.size() == sa.tensors.size());
    for (std::size_t k = 0; k < sa.tensors.size(); ++k) {
        CHECK(sz.tensors[k].first == sa.tensors[k].first);
        CHECK(test::max_abs_diff(sz.tensors[k].second, sa.tensors[k].second) == 0.f);
    }
    CHECK(zero.local_state_bytes() == 2 * 4 * (18 + 6 + 12 + 2));
}

TEST_CASE("ZeroRedundancyOptimizer loads plain Adam's state and continues as Adam does") {
    manual_seed(4);
    Net a;
    optim::Adam adam(a.parameters(), kAdam);
    train(a, adam, 2);
    manual_seed(4);
    Net b;
    for (std::size_t i = 0; i < 4; ++i) b.parameters()[i].mutable_data() = a.parameters()[i].data();
    ZeroRedundancyOptimizer zero(b.parameters(), {.lr = 0.5});
    zero.load_state_dict(adam.state_dict());
    CHECK(zero.lr() == doctest::Approx(1e-2));  // the saved hyperparameters, as torch
    train(a, adam, 2);
    train(b, zero, 2);
    for (std::size_t i = 0; i < 4; ++i) CHECK(test::max_abs_diff(a.parameters()[i].data(), b.parameters()[i].data()) == 0.f);
}

TEST_CASE("ZeroRedundancyOptimizer.load_state_dict: a state that does not fit is an Error naming the entry") {
    Net a;
    optim::Adam adam(a.parameters(), kAdam);
    train(a, adam, 1);
    const optim::OptimizerState good = adam.state_dict();
    Net b;
    ZeroRedundancyOptimizer zero(b.parameters(), kAdam);
    auto with = [&](auto change) {
        optim::OptimizerState s = good;
        change(s);
        return s;
    };
    test::expect_error([&] { zero.load_state_dict(with([](auto& s) { s.tensors[1].first = "state.9.exp_avg"; })); },
                       {"state.9.exp_avg", "names parameter 9", "has 4"});
    test::expect_error([&] { zero.load_state_dict(with([](auto& s) { s.tensors[1].second = Array(xt::zeros<float>({2, 2})); })); },
                       {"state.0.exp_avg", "(2,2)", "fc1.weight", "(6,3)"});
    test::expect_error([&] { zero.load_state_dict(with([](auto& s) { s.tensors[1].first = "state.x.exp_avg"; })); },
                       {"'state.x.exp_avg'", "state.<index>.<key>"});
    test::expect_error([&] { zero.load_state_dict(with([](auto& s) { s.param_groups = "[{\"params\": [0]}]"; })); },
                       {"optimizer state", "4 parameters"});
    test::expect_error([&] { zero.load_state_dict(with([](auto& s) { s.param_groups = "[[[[[[[[[[[[0]]]]]]]]]]]]"; })); },
                       {"param_groups", "deep"});
    test::expect_error([&] { zero.load_state_dict(with([](auto& s) { s.tensors.erase(s.tensors.begin() + 2); })); },
                       {"exp_avg_sq", "missing"});
}
