// Run checkpoints (nn::save_run / load_run): model, optimizer, schedule, epoch and generators
// in one safetensors file; a run continued from one is the same run. Model-only files
// (nn::save, PyTorch's) still load.
#include <xtgrad/nn/checkpoint.hpp>
#include <xtgrad/nn/layers.hpp>
#include <xtgrad/io/safetensors.hpp>
#include "tests/io/io_test_util.hpp"
#include "tests/test_util.hpp"

#include <algorithm>

TEST_SUITE_BEGIN("nn");

using namespace xtgrad;
using namespace xtgrad::nn;

namespace {

// A small model trained with dropout, so the generator matters.
struct Net : Module {
    std::shared_ptr<Linear> fc1 = register_module("fc1", std::make_shared<Linear>(3, 8));
    std::shared_ptr<Dropout> drop = register_module("drop", std::make_shared<Dropout>(0.3f));
    std::shared_ptr<Linear> fc2 = register_module("fc2", std::make_shared<Linear>(8, 2));
    Tensor forward(const Tensor& x) const { return fc2->forward(drop->forward(relu(fc1->forward(x)))); }
};

// A training run of the Net: everything a checkpoint must carry to continue it.
struct Run {
    Generator gen{7};
    Net net;
    optim::Adam opt{net.parameters(), optim::AdamOptions(0.01)};
    optim::LRScheduler schedule{opt, optim::linear_warmup(0.01, 3)};
    RunState state() { return {.optimizer = &opt, .schedule = &schedule, .generators = {{"default", &default_generator()}, {"data", &gen}}}; }
    void steps(long from, long to) {
        for (long s = from; s <= to; ++s) {
            const Tensor x = randn({4, 3}, gen);
            schedule.step();
            opt.zero_grad();
            sum(net.forward(x) * net.forward(x)).backward();
            opt.step();
        }
    }
};

std::vector<std::string> names(const SafetensorsFile& f) {
    std::vector<std::string> out;
    for (const auto& [name, a] : f.tensors) out.push_back(name);
    return out;
}

}  // namespace

TEST_CASE("Generator: state() and set_state() continue the same sequence") {
    Generator g(3);
    g.normal();
    const std::vector<std::uint8_t> s = g.state();
    const float next = g.normal();
    Generator h(99);
    h.set_state(s);
    CHECK(h.normal() == next);
    CHECK(h.state() == g.state());
    test::expect_error([&] { h.set_state({'x', 'y'}); }, {"Generator::set_state", "2 bytes"});
    CHECK(h.state() == g.state());  // unchanged by the bad bytes
}

TEST_CASE("run checkpoint: what it holds, under torch's optimizer names") {
    test::TempDir dir;
    manual_seed(0);
    Run run;
    run.steps(1, 2);
    RunState state = run.state();
    state.epoch = 2;
    save_run(dir.file("run.safetensors"), run.net, state, {{"seed", "0"}});
    const SafetensorsFile f = load_safetensors(dir.file("run.safetensors"));
    CHECK(names(f) == std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias",
                                               "optimizer.state.0.step", "optimizer.state.0.exp_avg",
                                               "optimizer.state.0.exp_avg_sq", "optimizer.state.1.step",
                                               "optimizer.state.1.exp_avg", "optimizer.state.1.exp_avg_sq",
                                               "optimizer.state.2.step", "optimizer.state.2.exp_avg",
                                               "optimizer.state.2.exp_avg_sq", "optimizer.state.3.step",
                                               "optimizer.state.3.exp_avg", "optimizer.state.3.exp_avg_sq"});
    CHECK(f.tensors[4].second() == 2.f);
    CHECK(f.tensors[5].second == *run.opt.state(run.net.fc1->weight, "exp_avg"));
    CHECK(f.metadata.at("xtgrad.run") == "1");
    CHECK(f.metadata.at("epoch") == "2");
    CHECK(f.metadata.at("seed") == "0");
    CHECK(f.metadata.at("format") == "pt");
    CHECK(f.metadata.at("schedule") == run.schedule.state_dict());
    CHECK(f.metadata.at("optimizer.param_groups") == run.opt.state_dict().param_groups);
    CHECK(f.metadata.count("generator.default") == 1);
    CHECK(f.metadata.count("generator.data") == 1);
    // nn::load reads the model out of a run file (the optimizer entries are set aside)
    Net other;
    CHECK_NOTHROW(load(other, dir.file("run.safetensors")));
    CHECK(other.fc2->bias.data() == run.net.fc2->bias.data());
}

TEST_CASE("run checkpoint: a resumed run is bit-identical to the straight one") {
    test::TempDir dir;
    manual_seed(0);
    Run straight;
    straight.steps(1, 6);
    const std::vector<std::uint8_t> default_after = default_generator().state();

    manual_seed(0);
    Run first;
    first.steps(1, 2);
    RunState saved = first.state();
    saved.epoch = 2;
    save_run(dir.file("run.safetensors"), first.net, saved);

    manual_seed(5);  // another process: other weights, other generators
    Run resumed;
    resumed.gen.seed(11);
    RunState state = resumed.state();
    const LoadedRun loaded = load_run(dir.file("run.safetensors"), resumed.net, state);
    CHECK(loaded.has_run_state);
    CHECK(state.epoch == 2);
    CHECK(resumed.schedule.last_step() == 2);
    resumed.steps(3, 6);
    CHECK(resumed.net.fc1->weight.data() == straight.net.fc1->weight.data());
    CHECK(resumed.net.fc2->bias.data() == straight.net.fc2->bias.data());
    CHECK(*resumed.opt.state(resumed.net.fc1->weight, "exp_avg_sq") == *straight.opt.state(straight.net.fc1->weight, "exp_avg_sq"));
    CHECK(default_generator().state() == default_after);

    // and the two final files are byte-identical
    RunState a = straight.state(), b = resumed.state();
    a.epoch = b.epoch = 6;
    save_run(dir.file("straight.safetensors"), straight.net, a);
    save_run(dir.file("resumed.safetensors"), resumed.net, b);
    CHECK(test::read_bytes(dir.file("straight.safetensors")) == test::read_bytes(dir.file("resumed.safetensors")));
}

TEST_CASE("run checkpoint: a model-only file loads the model alone; a file that does not fit changes nothing") {
    test::TempDir dir;
    manual_seed(0);
    Run source;
    save(source.net, dir.file("model.safetensors"));  // as PyTorch or --save-init writes
    manual_seed(1);
    Run target;
    target.steps(1, 1);
    RunState state = target.state();
    state.epoch = 1;
    const LoadedRun loaded = load_run(dir.file("model.safetensors"), target.net, state);
    CHECK_FALSE(loaded.has_run_state);
    CHECK(state.epoch == 1);  // left as it was
    CHECK(target.schedule.last_step() == 1);
    CHECK(target.net.fc1->weight.data() == source.net.fc1->weight.data());

    // a run file without the generator this run needs: an Error, the model keeps its values
    RunState partial{.optimizer = &source.opt, .generators = {}, .epoch = 3};
    source.steps(1, 1);
    save_run(dir.file("partial.safetensors"), source.net, partial);
    manual_seed(2);
    Run other;
    const Array before = other.net.fc1->weight.data();
    RunState wants = other.state();
    test::expect_error([&] { load_run(dir.file("partial.safetensors"), other.net, wants); },
                       {"partial.safetensors", "'generator.default'"});
    CHECK(other.net.fc1->weight.data() == before);
    // an optimizer state that does not fit (one over three of the four parameters): the model is put back
    Net wide_source;
    std::vector<Tensor> three = wide_source.parameters();
    three.pop_back();
    optim::Adam three_opt(three);
    RunState three_state{.optimizer = &three_opt, .generators = {}, .epoch = 0};  // no step: no epoch done
    save_run(dir.file("three.safetensors"), wide_source, three_state);
    RunState only_opt{.optimizer = &other.opt, .generators = {}};
    test::expect_error([&] { load_run(dir.file("three.safetensors"), other.net, only_opt); },
                       {"three.safetensors", "saved group has 3 parameters, this optimizer has 4"});
    CHECK(other.net.fc1->weight.data() == before);
}

TEST_SUITE_END();
