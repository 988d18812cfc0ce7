// ZeroRedundancyOptimizer's parts that need no mpirun: the partition, and the wrapper in a world
// of one process, where it must be plain Adam exactly (steps, state_dict, load_state_dict and
// its errors). The 2- and 3-process runs are tests/distributed/run_zero_test.sh.
#include <xtgrad/nn/layers.hpp>
#include <xtgrad/nn/parallel/zero_optimizer.hpp>
#include "test_util.hpp"

TEST_SUITE_BEGIN("distributed");

using namespace xtgrad;
using nn::parallel::partition_parameters;
using nn::parallel::ZeroRedundancyOptimizer;

namespace {

struct ZeroNet : nn::Module {
    std::shared_ptr<nn::Linear> fc1 = register_module("fc1", std::make_shared<nn::Linear>(3, 6));
    std::shared_ptr<nn::Linear> fc2 = register_module("fc2", std::make_shared<nn::Linear>(6, 2));
    Tensor forward(const Tensor& x) const { return fc2->forward(relu(fc1->forward(x))); }
};

const optim::AdamOptions kAdam = optim::AdamOptions(1e-2).betas({0.9, 0.98}).eps(1e-9);

void train(ZeroNet& net, optim::Optimizer& opt, int steps) {
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
    ZeroNet a;
    manual_seed(3);
    ZeroNet b;
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
    ZeroNet a;
    optim::Adam adam(a.parameters(), kAdam);
    train(a, adam, 2);
    manual_seed(4);
    ZeroNet b;
    for (std::size_t i = 0; i < 4; ++i) b.parameters()[i].mutable_data() = a.parameters()[i].data();
    ZeroRedundancyOptimizer zero(b.parameters(), optim::AdamOptions(0.5));
    zero.load_state_dict(adam.state_dict());
    CHECK(zero.lr() == doctest::Approx(1e-2));  // the saved hyperparameters, as torch
    train(a, adam, 2);
    train(b, zero, 2);
    for (std::size_t i = 0; i < 4; ++i) CHECK(test::max_abs_diff(a.parameters()[i].data(), b.parameters()[i].data()) == 0.f);
}

TEST_CASE("ZeroRedundancyOptimizer.load_state_dict: a state that does not fit is an Error naming the entry") {
    ZeroNet a;
    optim::Adam adam(a.parameters(), kAdam);
    train(a, adam, 1);
    const optim::OptimizerState good = adam.state_dict();
    ZeroNet b;
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

TEST_CASE("consolidate_state_dict's shard message: round trip; cut short, corrupt lengths, extra bytes are Errors naming the sender") {
    using nn::parallel::detail::deserialize_shard;
    using nn::parallel::detail::serialize_shard;
    const std::vector<std::pair<std::string, Array>> entries = {{"state.3.step", Array(7.f)},
                                                                {"state.3.exp_avg", test::rnd({2, 3}, 1).data()}};
    const std::vector<unsigned char> bytes = serialize_shard(entries);
    const auto back = deserialize_shard(bytes, 1);
    REQUIRE(back.size() == 2);
    CHECK(back[0].first == "state.3.step");
    CHECK(back[0].second.dimension() == 0);
    CHECK(back[1].first == "state.3.exp_avg");
    CHECK(test::max_abs_diff(back[1].second, entries[1].second) == 0.f);
    for (std::size_t cut : {std::size_t{0}, std::size_t{5}, std::size_t{20}, bytes.size() - 1})
        test::expect_error([&] { deserialize_shard(std::vector<unsigned char>(bytes.begin(), bytes.begin() + static_cast<long>(cut)), 2); },
                           {"ZeroRedundancyOptimizer.consolidate_state_dict", "rank 2", "cut short"});
    std::vector<unsigned char> longer = bytes;
    longer.push_back(0);
    test::expect_error([&] { deserialize_shard(longer, 1); }, {"rank 1", "bytes after its last entry"});
    std::vector<unsigned char> huge_name = bytes;
    for (std::size_t k = 8; k < 16; ++k) huge_name[k] = 0xff;  // the first name's length: 2^64 - 1
    test::expect_error([&] { deserialize_shard(huge_name, 1); }, {"cut short", "an entry's name"});
    std::vector<unsigned char> many_dims = bytes;
    many_dims[8 + 8 + 12] = 200;  // the first entry's dimension count ("state.3.step" is 12 bytes)
    test::expect_error([&] { deserialize_shard(many_dims, 1); }, {"'state.3.step'", "200 dimensions"});
    std::vector<unsigned char> huge_count = bytes;
    huge_count[7] = 0x7f;  // 2^62-odd entries claimed
    test::expect_error([&] { deserialize_shard(huge_count, 1); }, {"rank 1", "cut short"});
}

TEST_CASE("ZeroRedundancyOptimizer over another optimizer (a factory): SGD with momentum as plain SGD; a bad factory is an Error") {
    const optim::SGDOptions sgd = optim::SGDOptions(0.1).momentum(0.9);
    manual_seed(5);
    ZeroNet a;
    manual_seed(5);
    ZeroNet b;
    optim::SGD plain(a.parameters(), sgd);
    ZeroRedundancyOptimizer zero(b.parameters(), [&](std::vector<Tensor> p) { return std::make_unique<optim::SGD>(std::move(p), sgd); });
    train(a, plain, 3);
    train(b, zero, 3);
    for (std::size_t i = 0; i < 4; ++i) CHECK(test::max_abs_diff(a.parameters()[i].data(), b.parameters()[i].data()) == 0.f);
    CHECK(zero.state_dict().tensors.size() == plain.state_dict().tensors.size());
    CHECK(zero.local_state_bytes() == 4 * (18 + 6 + 12 + 2));  // one momentum buffer per parameter
    ZeroNet c;
    test::expect_error([&] { ZeroRedundancyOptimizer(c.parameters(), [](std::vector<Tensor>) { return std::unique_ptr<optim::Optimizer>(); }); },
                       {"ZeroRedundancyOptimizer", "factory returned nothing"});
    test::expect_error([&] {
        ZeroRedundancyOptimizer(c.parameters(), [&](std::vector<Tensor>) { return std::make_unique<optim::SGD>(std::vector<Tensor>{}, sgd); });
    }, {"local optimizer holds 0 parameters", "owns 4"});
}

TEST_CASE("ZeroRedundancyOptimizer.step: a parameter frozen after construction is an Error naming it, nothing stepped") {
    // Its owner would skip it while the others wait for its broadcast, or step a bias the other
    // processes froze: the same verdict everywhere instead (run_zero_test.sh tries 2 processes).
    ZeroNet net;
    ZeroRedundancyOptimizer zero(net.parameters(), kAdam);
    sum(net.forward(test::rnd({4, 3}, 1))).backward();
    const Array before = net.fc2->bias.data();
    net.fc2->bias.requires_grad_(false);
    test::expect_error([&] { zero.step(); }, {"ZeroRedundancyOptimizer.step", "'fc2.bias'", "frozen after the optimizer was built"});
    CHECK(test::max_abs_diff(net.fc2->bias.data(), before) == 0.f);
    CHECK(zero.local_state_bytes() == 0);
}
