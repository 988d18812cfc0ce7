// DistributedDataParallel's parts that need no mpirun (nn/parallel/): the bucket assignment,
// DistributedSampler, and the wrapper in a world of one process, where averaging over the
// processes must leave every gradient exactly as plain backward computes it. The 2-process
// runs are tests/distributed/run_mpi_test.sh.
#include <xtgrad/autograd/post_accumulate_hooks.hpp>
#include <xtgrad/nn/layers.hpp>
#include <xtgrad/nn/parallel/distributed.hpp>
#include <xtgrad/nn/parallel/distributed_sampler.hpp>
#include <xtgrad/nn/parallel/zero_optimizer.hpp>
#include <xtgrad/optim/in_backward.hpp>
#include "test_util.hpp"
#include "tests/distributed/two_layers.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <set>
#include <vector>

TEST_SUITE_BEGIN("distributed");

using namespace xtgrad;
using nn::parallel::compute_bucket_assignment_by_size;
using nn::parallel::DistributedDataParallel;
using nn::parallel::DistributedSampler;
using Buckets = std::vector<std::vector<std::size_t>>;

TEST_CASE("bucket assignment: a bucket closes once it reaches its cap, the first at the smaller cap") {
    CHECK(compute_bucket_assignment_by_size({4, 4, 4, 4, 4}, 4, 8) == Buckets{{0}, {1, 2}, {3, 4}});
    CHECK(compute_bucket_assignment_by_size({3, 3, 10, 1}, 5, 8) == Buckets{{0, 1}, {2}, {3}});
    // a tensor larger than the cap gets a bucket of its own; the rest stays in order
    CHECK(compute_bucket_assignment_by_size({1, 100, 1, 1}, 1, 8) == Buckets{{0}, {1}, {2, 3}});
    CHECK(compute_bucket_assignment_by_size({}, 1, 8).empty());
}

TEST_CASE("bucket assignment of tutorial B's sizes at 25 MB: every tensor once, buckets near the cap") {
    std::vector<std::size_t> bytes;
    for (int layer = 0; layer < 12; ++layer)
        for (std::size_t n : {512u * 512, 512u, 512u * 2048, 2048u, 2048u * 512, 512u}) bytes.push_back(n * 4);
    const std::size_t mb = 1024 * 1024;
    const Buckets b = compute_bucket_assignment_by_size(bytes, 1 * mb, 25 * mb);
    std::set<std::size_t> seen;
    for (std::size_t k = 0; k < b.size(); ++k) {
        std::size_t size = 0;
        for (std::size_t i : b[k]) {
            CHECK(seen.insert(i).second);
            size += bytes[i];
        }
        if (k + 1 < b.size()) CHECK(size >= (k == 0 ? 1 : 25) * mb);  // closed at its cap...
        CHECK(size - bytes[b[k].back()] < (k == 0 ? 1 : 25) * mb);      // ...by its last tensor
    }
    CHECK(seen.size() == bytes.size());
}

TEST_CASE("DistributedSampler: interleaved shares, padded from the start as torch") {
    // 10 samples on 4 ranks: 3 each, total 12, padded with samples 0 and 1
    CHECK(DistributedSampler(10, 4, 0, false).indices() == std::vector<std::size_t>{0, 4, 8});
    CHECK(DistributedSampler(10, 4, 1, false).indices() == std::vector<std::size_t>{1, 5, 9});
    CHECK(DistributedSampler(10, 4, 2, false).indices() == std::vector<std::size_t>{2, 6, 0});
    CHECK(DistributedSampler(10, 4, 3, false).indices() == std::vector<std::size_t>{3, 7, 1});
    // drop_last: 2 each, samples 8 and 9 left out
    CHECK(DistributedSampler(10, 4, 3, false, 0, true).indices() == std::vector<std::size_t>{3, 7});
    CHECK(DistributedSampler(10, 4, 3, false, 0, true).size() == 2);
    // fewer samples than ranks: the padding repeats the list as often as needed
    CHECK(DistributedSampler(2, 5, 4, false).indices() == std::vector<std::size_t>{0});
}

TEST_CASE("DistributedSampler: batch k of every rank together is batch k of one process") {
    const std::size_t global = 8, ranks = 2, per = global / ranks;
    for (std::size_t k = 0; k < 3; ++k) {
        std::set<std::size_t> together;
        for (int r = 0; r < 2; ++r) {
            const auto idx = DistributedSampler(24, 2, r, false).indices();
            together.insert(idx.begin() + static_cast<long>(k * per), idx.begin() + static_cast<long>((k + 1) * per));
        }
        std::set<std::size_t> single;
        for (std::size_t i = k * global; i < (k + 1) * global; ++i) single.insert(i);
        CHECK(together == single);
        (void)ranks;
    }
}

TEST_CASE("DistributedSampler: a shuffle per epoch, the same on every rank, the ranks disjoint") {
    DistributedSampler r0(12, 3, 0, true, 7), r1(12, 3, 1, true, 7), r2(12, 3, 2, true, 7);
    std::set<std::size_t> all;
    for (auto* s : {&r0, &r1, &r2})
        for (std::size_t i : s->indices()) CHECK(all.insert(i).second);
    CHECK(all.size() == 12);
    const auto epoch0 = r0.indices();
    r0.set_epoch(1);
    CHECK(r0.indices() != epoch0);
    CHECK(DistributedSampler(12, 3, 0, true, 7).indices() == epoch0);
}

TEST_CASE("DistributedSampler and select_rows: bad ranks and rows are errors") {
    test::expect_error([] { DistributedSampler(10, 2, 2); }, {"DistributedSampler", "invalid rank 2", "[0, 1]"});
    test::expect_error([] { DistributedSampler(10, 0, 0); }, {"DistributedSampler", "num_replicas", "0"});
    const Ids a = {{1, 2}, {3, 4}, {5, 6}};
    CHECK(nn::parallel::select_rows(a, {2, 0}) == Ids{{5, 6}, {1, 2}});
    test::expect_error([&] { nn::parallel::select_rows(a, {3}); }, {"select_rows", "row 3", "3 rows"});
}

TEST_CASE("DistributedSampler: only -1 means the process group's; other negatives are errors naming both values") {
    const DistributedSampler from_group(10);  // one process: world 1, rank 0
    CHECK(from_group.size() == 10);
    CHECK(DistributedSampler(10, 2, -1).size() == 5);  // rank 0 of this one-process group
    test::expect_error([] { DistributedSampler(10, 2, -7); },
                       {"DistributedSampler", "num_replicas 2 and rank -7", "must be -1 (the process group's)"});
    test::expect_error([] { DistributedSampler(10, -3, 0); }, {"DistributedSampler", "num_replicas -3 and rank 0", "-1"});
}

TEST_CASE("DistributedSampler: sizes near SIZE_MAX do not wrap; a padded total past a list's bound is an error") {
    // The ceiling used to add N - 1 first: (SIZE_MAX + 2) / 3 wrapped to 0 samples.
    test::expect_error([] { DistributedSampler(SIZE_MAX, 3, 1); },
                       {"DistributedSampler", "dataset_size 18446744073709551615 padded to a multiple of 3 replicas"});
    const std::size_t max_list = std::vector<std::size_t>().max_size();
    const DistributedSampler largest(max_list, 1, 0);  // fits: no list is made until indices()
    CHECK(largest.size() == max_list);
    CHECK(largest.total_size() == max_list);
    test::expect_error([&] { DistributedSampler(max_list + 1, 1, 0); }, {"DistributedSampler", "past the"});
    // A large size far from the bound: torch's ceiling and floor.
    CHECK(DistributedSampler(1000001, 3, 2).size() == 333334);
    CHECK(DistributedSampler(1000001, 3, 2, true, 0, /*drop_last=*/true).size() == 333333);
    CHECK(DistributedSampler(1000001, 3, 2).total_size() == 1000002);
}

namespace {

using test::TwoLayers;

std::vector<Array> grads_of(const nn::Module& m) {
    std::vector<Array> g;
    for (const Tensor& p : m.parameters()) g.push_back(p.has_grad() ? p.grad_array() : Array{});
    return g;
}

}  // namespace

TEST_CASE("DistributedDataParallel in one process: backward leaves the plain gradients, in several buckets") {
    TwoLayers model;
    const Tensor x = test::rnd({5, 3}, 1);
    sum(model.forward(x)).backward();
    const std::vector<Array> plain = grads_of(model);
    model.zero_grad();
    // caps of a few bytes: one bucket per parameter, launched in reverse registration order
    DistributedDataParallel ddp(model, {.bucket_cap_mb = 1e-6, .first_bucket_cap_mb = 1e-6});
    CHECK(ddp.buckets() == Buckets{{3}, {2}, {1}, {0}});
    for (int step = 0; step < 2; ++step) {
        model.zero_grad();
        sum(ddp.forward(x)).backward();
        const std::vector<Array> g = grads_of(model);
        for (std::size_t i = 0; i < g.size(); ++i) CHECK(test::max_abs_diff(g[i], plain[i]) == 0.f);
    }
    CHECK(ddp.stats().steps == 2);
}

TEST_CASE("DistributedDataParallel: no_sync accumulates, the next synchronised backward reduces the sum") {
    TwoLayers model;
    const Tensor x = test::rnd({5, 3}, 2);
    DistributedDataParallel ddp(model);
    {
        const auto no_sync = ddp.no_sync();
        sum(ddp.forward(x)).backward();
    }
    CHECK(ddp.stats().steps == 0);
    sum(ddp.forward(x)).backward();
    CHECK(ddp.stats().steps == 1);
    const std::vector<Array> twice = grads_of(model);
    model.zero_grad();
    sum(model.forward(x)).backward();
    const std::vector<Array> once = grads_of(model);
    for (std::size_t i = 0; i < once.size(); ++i) CHECK(test::max_abs_diff(twice[i], Array(once[i] * 2.f)) < 1e-6f);
}

TEST_CASE("DistributedDataParallel: unused parameters are an error naming them, or zeros when asked for") {
    TwoLayers model;
    model.skip_fc2 = true;
    const Tensor x = test::rnd({5, 3}, 3);
    {
        DistributedDataParallel ddp(model);
        test::expect_error([&] { ddp.forward(x); },
                           {"DistributedDataParallel", "2 parameter(s)", "fc2.weight, fc2.bias", "find_unused_parameters"});
    }
    DistributedDataParallel ddp(model, {.find_unused_parameters = true});
    model.zero_grad();
    sum(ddp.forward(x)).backward();
    CHECK(model.fc1->weight.has_grad());
    CHECK_FALSE(model.fc2->weight.has_grad());  // no rank used it: no gradient, as torch
    CHECK(ddp.stats().steps == 1);
}

TEST_CASE("DistributedDataParallel: a backward not armed by ddp.forward stays local, as torch") {
    TwoLayers model;
    DistributedDataParallel ddp(model);
    const Tensor x = test::rnd({5, 3}, 4);
    sum(model.forward(x)).backward();  // the module called directly
    CHECK(ddp.stats().steps == 0);
    CHECK(model.fc1->weight.has_grad());
    Tensor loss = sum(ddp.forward(x));
    loss.backward(true);
    CHECK(ddp.stats().steps == 1);
}

TEST_CASE("DistributedDataParallel: a second backward after one forward is an Error, not a gradient left unaveraged") {
    TwoLayers model;
    DistributedDataParallel ddp(model);
    const Tensor x = test::rnd({5, 3}, 4);
    Tensor loss = sum(ddp.forward(x));
    loss.backward(true);
    test::expect_error([&] { loss.backward(); }, {"DistributedDataParallel", "received a second gradient after one forward", "no_sync()"});
    // the same through another graph, onto the averaged gradients
    test::expect_error([&] { sum(model.forward(x)).backward(); }, {"second gradient"});
    // after zero_grad, a backward of the module called directly is local again (nothing averaged is touched)
    model.zero_grad();
    sum(model.forward(x)).backward();
    CHECK(ddp.stats().steps == 1);
    // the next ddp.forward starts a new step
    model.zero_grad();
    sum(ddp.forward(x)).backward();
    CHECK(ddp.stats().steps == 2);
}

TEST_CASE("DistributedDataParallel: a gradient of the wrong shape (set by a hook) is an Error naming the parameter") {
    TwoLayers model;
    register_post_accumulate_grad_hook(model.fc2->bias, [](TensorImpl& t) { t.grad = std::make_shared<Array>(empty_array({7})); });
    DistributedDataParallel ddp(model);
    test::expect_error([&] { sum(ddp.forward(test::rnd({5, 3}, 5))).backward(); }, {"fc2.bias", "(7)"});
}

TEST_CASE("DistributedDataParallel: a parameter frozen after the wrapper was built is an Error naming it") {
    TwoLayers model;
    DistributedDataParallel ddp(model);
    model.fc1->bias.requires_grad_(false);
    test::expect_error([&] { ddp.forward(test::rnd({5, 3}, 6)); }, {"fc1.bias", "frozen", "after the wrapper was built"});
}

TEST_CASE("DistributedDataParallel: set_gradient_weight scales this process's part; out of [0, 1] is refused") {
    TwoLayers model;
    const Tensor x = test::rnd({5, 3}, 7);
    sum(model.forward(x)).backward();
    const std::vector<Array> plain = grads_of(model);
    model.zero_grad();
    DistributedDataParallel ddp(model);
    ddp.set_gradient_weight(0.25);
    sum(ddp.forward(x)).backward();
    const std::vector<Array> g = grads_of(model);
    for (std::size_t i = 0; i < g.size(); ++i) CHECK(test::max_abs_diff(g[i], Array(plain[i] * 0.25f)) < 1e-7f);
    for (double bad : {-0.1, 1.5, std::nan("")})
        test::expect_error([&] { ddp.set_gradient_weight(bad); }, {"set_gradient_weight", "[0, 1]"});
}

TEST_CASE("register_post_accumulate_grad_hook sees the complete gradient in .grad, once per backward") {
    Tensor x = Tensor::from_vector({1, 2}, {2}, true).set_name("x");
    std::vector<float> seen;
    register_post_accumulate_grad_hook(x, [&](TensorImpl& t) { seen.push_back((*t.grad)(1)); });
    sum(x * x + x).backward();  // two consumers: 2x + 1
    sum(x).backward();          // accumulates: + 1
    CHECK(seen == std::vector<float>{5.f, 6.f});
    Tensor y = x * 2.f;
    test::expect_error([&] { register_post_accumulate_grad_hook(y, [](TensorImpl&) {}); },
                       {"register_post_accumulate_grad_hook", "leaf"});
}

TEST_CASE("register_post_accumulate_grad_hook: remove() through the handle, last hooks after the others, empty refused") {
    Tensor x = Tensor::ones({2}, true).set_name("x");
    std::vector<std::string> order;
    register_post_accumulate_grad_hook(x, [&](TensorImpl&) { order.push_back("last"); }, {.owner = "me", .last = true});
    PostAccumulateHookHandle h = register_post_accumulate_grad_hook(x, [&](TensorImpl&) { order.push_back("plain"); });
    CHECK(has_post_accumulate_grad_hook(x, "me"));
    CHECK_FALSE(has_post_accumulate_grad_hook(x, "someone else"));
    sum(x).backward();
    CHECK(order == std::vector<std::string>{"plain", "last"});
    h.remove();
    h.remove();  // twice: nothing
    sum(x).backward();
    CHECK(order == std::vector<std::string>{"plain", "last", "last"});
    test::expect_error([&] { register_post_accumulate_grad_hook(x, std::function<void(TensorImpl&)>()); },
                       {"register_post_accumulate_grad_hook", "'x'", "empty"});
}

TEST_CASE("DistributedDataParallel and the optimizer's step in backward refuse each other, in either order") {
    TwoLayers model;
    {
        DistributedDataParallel ddp(model);
        optim::Adam opt(model.parameters());
        test::expect_error([&] { optim::OptimizerInBackward in_backward(opt); },
                           {"OptimizerInBackward", "DistributedDataParallel", "averaged"});
    }
    TwoLayers other;
    optim::Adam opt(other.parameters());
    optim::OptimizerInBackward in_backward(opt);
    test::expect_error([&] { DistributedDataParallel ddp(other); },
                       {"DistributedDataParallel", "steps in backward", "average"});
    CHECK(has_post_accumulate_grad_hook(other.fc1->weight, hook_owner::optimizer_in_backward));
}

TEST_CASE("XTGRAD_DIST_TIMEOUT: positive finite seconds, with or without a unit; anything else names the variable and value") {
    using std::chrono::duration;
    CHECK(distributed::parse_timeout("300") == duration<double>(300));
    CHECK(distributed::parse_timeout("1") == duration<double>(1));  // the lower bound
    CHECK(distributed::parse_timeout("1.5") == duration<double>(1.5));
    CHECK(distributed::parse_timeout("90s") == duration<double>(90));
    CHECK(distributed::parse_timeout("5m") == duration<double>(300));
    CHECK(distributed::parse_timeout("2h") == duration<double>(7200));
    for (const char* bad : {"nan", "inf", "0", "-1", "", "5 m", "5min", "m", "+5", " 5", "1e400", "5mm"})
        test::expect_error([&] { distributed::parse_timeout(bad); },
                           {"XTGRAD_DIST_TIMEOUT='", "not a positive finite time"});
    test::expect_error([] { distributed::set_timeout(duration<double>(std::nan(""))); }, {"set_timeout", "positive finite"});
}

TEST_CASE("XTGRAD_DIST_TIMEOUT under 1 s is an Error naming the value and the bound (the lost-rank probe reported live ranks dead)") {
    using std::chrono::duration;
    for (const char* tiny : {"0.001", "1e-300", "0.5", "0.99s", "0.01m"}) {
        const std::string named = fmt::format("XTGRAD_DIST_TIMEOUT='{}'", tiny);
        test::expect_error([&] { distributed::parse_timeout(tiny); }, {named.c_str(), "lower bound of 1 s"});
    }
    const duration<double> before = distributed::timeout();
    test::expect_error([] { distributed::set_timeout(duration<double>(0.001)); },
                       {"set_timeout", "0.001 s", "lower bound of 1 s"});
    CHECK(distributed::timeout() == before);  // refused: unchanged
}

TEST_CASE("DistributedDataParallel: bucket caps of inf or 1e30 MB are one bucket (no out-of-range cast); 0 and -1 refused") {
    TwoLayers model;
    for (double huge : {std::numeric_limits<double>::infinity(), 1e30}) {
        DistributedDataParallel ddp(model, {.bucket_cap_mb = huge, .first_bucket_cap_mb = huge});
        CHECK(ddp.buckets() == Buckets{{3, 2, 1, 0}});
    }
    for (double bad : {0.0, -1.0, std::nan("")})
        test::expect_error([&] { DistributedDataParallel ddp(model, {.bucket_cap_mb = bad}); },
                           {"DistributedDataParallel", "bucket caps must be positive"});
}

TEST_CASE("under mpirun without init_process_group, DDP, ZeRO, the sampler's defaults and collectives are Errors, not a world of 1") {
    if (!distributed::mpi_available() || distributed::is_initialized()) return;  // a world of 1 by design
    const bool had = std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr;
    if (!had) setenv("OMPI_COMM_WORLD_SIZE", "2", 1);  // what mpirun sets
    TwoLayers model;
    const char* why = "init_process_group() was not called";
    test::expect_error([&] { DistributedDataParallel ddp(model); }, {"DistributedDataParallel", why});
    test::expect_error([&] { nn::parallel::ZeroRedundancyOptimizer z(model.parameters(), optim::AdamOptions(1e-3)); },
                       {"ZeroRedundancyOptimizer", why});
    test::expect_error([] { DistributedSampler s(10); }, {"DistributedSampler", why});
    CHECK(DistributedSampler(10, 2, 1).size() == 5);  // explicit replicas and rank need no group
    float v = 1;
    test::expect_error([&] { distributed::all_reduce(&v, 1, "the test's sum"); }, {"the test's sum", why});
    test::expect_error([] { distributed::barrier(); }, {"barrier", why});
    if (!had) unsetenv("OMPI_COMM_WORLD_SIZE");
}

TEST_SUITE_END();
