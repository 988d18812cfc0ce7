// HostileRun checkpoints from a hostile or careless writer (issue 26): every metadata field goes
// through one bounded, type-checked path, and a file that does not fit changes nothing — the
// model, the optimizer, the schedule, the generators and the epoch are compared before and
// after each refused load.
#include <xtgrad/nn/checkpoint.hpp>
#include <xtgrad/nn/layers.hpp>
#include <xtgrad/io/safetensors.hpp>
#include "tests/io/io_test_util.hpp"
#include "tests/test_util.hpp"

#include <algorithm>
#include <filesystem>
#include <functional>

TEST_SUITE_BEGIN("nn");

using namespace xtgrad;
using namespace xtgrad::nn;

namespace {

struct HostileNet : Module {
    std::shared_ptr<Linear> fc = register_module("fc", std::make_shared<Linear>(3, 2));
};

// A run: model, Adam, a warm-up schedule and a generator, trained a few steps.
struct HostileRun {
    Generator gen{3};
    HostileNet net;
    optim::Adam opt{net.parameters(), optim::AdamOptions(0.01)};
    optim::LRScheduler schedule{opt, optim::linear_warmup(0.01, 3)};
    RunState state{.optimizer = &opt, .schedule = &schedule, .generators = {{"data", &gen}}};
    void steps(int n) {
        for (int s = 0; s < n; ++s) {
            schedule.step();
            opt.zero_grad();
            sum(net.fc->forward(randn({4, 3}, gen))).backward();
            opt.step();
        }
        state.epoch += n;
    }
};

// Everything load_run may change, as text and bytes, to compare before and after.
struct RunObserved {
    std::vector<Array> model, optimizer;
    std::string param_groups, schedule;
    std::vector<std::uint8_t> generator;
    long epoch;
    explicit RunObserved(const HostileRun& r) : schedule(r.schedule.state_dict()), generator(r.gen.state()), epoch(r.state.epoch) {
        for (const auto& [name, t] : r.net.state_dict()) model.push_back(t.data());
        const optim::OptimizerState o = r.opt.state_dict();
        for (const auto& [name, a] : o.tensors) optimizer.push_back(a);
        param_groups = o.param_groups;
    }
    bool operator==(const RunObserved&) const = default;
};

// A good run file rewritten by `edit` (its tensors and metadata), then loaded into another run:
// the load must fail with every part of `message`, and change nothing in that run.
void expect_load_refused(const std::function<void(NamedArrays&, std::map<std::string, std::string>&)>& edit,
                    std::initializer_list<const char*> message) {
    test::TempDir dir;
    const std::string path = dir.file("run.safetensors");
    HostileRun source;
    source.steps(2);
    save_run(path, source.net, source.state);
    SafetensorsFile file = load_safetensors(path);
    edit(file.tensors, file.metadata);
    save_safetensors(path, file.tensors, file.metadata);

    manual_seed(9);
    HostileRun target;
    target.steps(1);
    const RunObserved before(target);
    test::expect_error([&] { load_run(path, target.net, target.state); }, message);
    CHECK(RunObserved(target) == before);
}

std::string with_replaced(std::string text, const std::string& from, const std::string& to) {
    const std::size_t at = text.find(from);
    REQUIRE_MESSAGE(at != std::string::npos, from << " is not in " << text);
    return text.replace(at, from.size(), to);
}

Array zero_array(const Shape& shape) {
    Array a = empty_array(shape);
    a.fill(0.f);
    return a;
}

void erase_entries_named(NamedArrays& tensors, const std::string& part) {
    std::erase_if(tensors, [&](const auto& entry) { return entry.first.find(part) != std::string::npos; });
}

}  // namespace

TEST_CASE("run checkpoint: a deeply nested param_groups is refused before parsing, naming the entry") {
    expect_load_refused([](NamedArrays&, auto& meta) { meta["optimizer.param_groups"] = std::string(200'000, '[') + std::string(200'000, ']'); },
                   {"run.safetensors", "metadata entry 'optimizer.param_groups'", "nests lists and objects more than 4 deep"});
    expect_load_refused([](NamedArrays&, auto& meta) { meta["schedule"] = std::string(100'000, '['); },
                   {"metadata entry 'schedule'", "more than 4 deep"});
}

TEST_CASE("run checkpoint: hyperparameters of the wrong type, missing or out of range are Errors naming the field") {
    const auto group_edit = [](std::string from, std::string to) {
        return [=](NamedArrays&, std::map<std::string, std::string>& meta) {
            meta["optimizer.param_groups"] = with_replaced(meta["optimizer.param_groups"], from, to);
        };
    };
    expect_load_refused(group_edit("\"lr\":", "\"lr\":\"x\",\"was\":"), {"run.safetensors", "the param group's 'lr' must be a number"});
    expect_load_refused(group_edit("\"eps\":", "\"eps\":-1e-8,\"was\":"), {"run.safetensors", "eps must be a finite number >= 0, got -1e-08"});
    expect_load_refused(group_edit("\"betas\":", "\"betas\":[0.9,1.5],\"was\":"), {"run.safetensors", "betas must be in [0, 1)"});
    expect_load_refused(group_edit("\"betas\":", "\"was\":"), {"run.safetensors", "betas must be two numbers"});
    expect_load_refused(group_edit("\"amsgrad\":false", "\"amsgrad\":true"), {"run.safetensors", "amsgrad is not implemented"});
    expect_load_refused(group_edit("\"params\":[0,1]", "\"params\":[0]"), {"saved group has 1 parameters, this optimizer has 2"});
    expect_load_refused(group_edit("[{", "[{},{"), {"run.safetensors", "param_groups must be a list of one group"});
    expect_load_refused(group_edit("[{", "[{\"lr\""), {"metadata entry 'optimizer.param_groups'", "not valid JSON"});
    for (const char* last : {"\"2\"", "-1", "2.7", "9223372036854775807", "18446744073709551615", "1e30"})
        expect_load_refused([&](NamedArrays&, auto& meta) {
            meta["schedule"] = fmt::format(R"({{"last_epoch":{},"_last_lr":[0.01]}})", last);
        }, {"metadata entry 'schedule'", "last_epoch must be a whole number in [0, 9007199254740992]"});
    expect_load_refused([](NamedArrays&, auto& meta) { meta["schedule"] = R"({"last_epoch":2,"_last_lr":[-1]})"; },
                   {"'schedule'", "_last_lr"});
    for (const char* epoch : {" 2", "2x", "-1", "1e3", "", "99999999999999999999"})
        expect_load_refused([&](NamedArrays&, auto& meta) { meta["epoch"] = epoch; }, {"metadata entry 'epoch'", "not a whole number"});
    expect_load_refused([](NamedArrays&, auto& meta) { meta["generator.data"] = "zz"; }, {"run.safetensors", "'generator.data'", "not lowercase hex"});
    // a character that is no hex digit is named by its place, escaped: a stray UTF-8 byte or a NUL
    // once went into the message raw (no text; a message cut at the NUL)
    expect_load_refused([](NamedArrays&, auto& meta) { meta["generator.data"] = "ab\xc3\xa9"; },
                        {"'generator.data': not lowercase hex (byte 2: '\\xc3')"});
    expect_load_refused([](NamedArrays&, auto& meta) { meta["generator.data"] = std::string("a\0", 2); },
                        {"'generator.data': not lowercase hex (byte 1: '\\x00')"});
    // a state that is hex but no generator state: named by its entry too (which of several generators)
    expect_load_refused([](NamedArrays&, auto& meta) { meta["generator.data"] = "3720"; },
                        {"metadata entry 'generator.data': Generator::set_state", "field 2"});
    expect_load_refused([](NamedArrays&, auto& meta) {
        std::string& hex = meta["generator.data"];
        hex[hex.size() / 2] = hex[hex.size() / 2] == '1' ? '2' : '1';  // one field's digit changed
    }, {"metadata entry 'generator.data': Generator::set_state", "its check"});
    expect_load_refused([](NamedArrays&, auto& meta) { meta.erase("optimizer.param_groups"); }, {"without the metadata entry 'optimizer.param_groups'"});
}

TEST_CASE("run checkpoint: keys Adam does not keep (torch's foreach, SGD's nesterov) are ignored, whatever their type") {
    test::TempDir dir;
    const std::string path = dir.file("run.safetensors");
    HostileRun source;
    source.steps(2);
    save_run(path, source.net, source.state);
    SafetensorsFile file = load_safetensors(path);
    file.metadata["optimizer.param_groups"] =
        with_replaced(file.metadata["optimizer.param_groups"], "[{", R"([{"nesterov":"x","foreach":null,)");
    save_safetensors(path, file.tensors, file.metadata);
    HostileRun target;
    CHECK_NOTHROW(load_run(path, target.net, target.state));
    CHECK(target.state.epoch == 2);
}

TEST_CASE("run checkpoint: missing Adam moments or optimizer entries are refused, not resumed from zeros") {
    expect_load_refused([](NamedArrays& t, auto&) { erase_entries_named(t, "state.1.exp_avg_sq"); },
                   {"run.safetensors", "parameter 1 took 2 steps but 'state.1.exp_avg_sq' is missing"});
    expect_load_refused([](NamedArrays& t, auto&) { erase_entries_named(t, "state.0.exp_avg"); },
                   {"run.safetensors", "parameter 0 took 2 steps but 'state.0.exp_avg' is missing"});
    expect_load_refused([](NamedArrays& t, auto&) { erase_entries_named(t, "optimizer."); },
                   {"the run did 2 epochs or steps but holds no optimizer state"});
}

TEST_CASE("run checkpoint: a failure after the model was read puts the model, optimizer and schedule back") {
    // a moment of the wrong shape is found by the optimizer, after the model is loaded
    expect_load_refused([](NamedArrays& t, auto&) {
        for (auto& [name, a] : t)
            if (name == "optimizer.state.0.exp_avg") a = zero_array(Shape{5});
    }, {"run.safetensors", "'state.0.exp_avg' has shape (5)"});
    // a model tensor of the wrong shape
    expect_load_refused([](NamedArrays& t, auto&) { t[0].second = zero_array(Shape{1}); }, {"run.safetensors", "fc.weight"});
}

TEST_CASE("save_run refuses, before writing, a run that load_run would refuse") {
    test::TempDir dir;
    const std::string path = dir.file("run.safetensors");
    HostileRun run;
    run.steps(1);
    Generator other{5};
    auto refused = [&](const RunState& state, std::initializer_list<const char*> message,
                       const std::map<std::string, std::string>& metadata = {}) {
        test::expect_error([&] { save_run(path, run.net, state, metadata); }, message);
        CHECK_FALSE(std::filesystem::exists(path));
    };
    RunState state = run.state;
    state.generators.emplace_back("spare", nullptr);
    refused(state, {"save '", "generator 'spare' is a null pointer"});
    state.generators.back().second = &other;
    state.generators.back().first = "data";
    refused(state, {"two generators are named 'data'"});
    state = run.state;
    state.epoch = -5;
    refused(state, {"epoch -5 must be >= 0"});
    refused(run.state, {"metadata entry 'xtgrad.run'", "run marker"}, {{"xtgrad.run", "1"}});
    test::expect_error([&] { nn::save(run.net, path, {{"xtgrad.run", "1"}}); }, {"xtgrad.run"});
    CHECK_FALSE(std::filesystem::exists(path));
    // epochs done but no optimizer state: the file would not resume
    HostileRun fresh;
    fresh.state.epoch = 3;
    test::expect_error([&] { save_run(path, fresh.net, fresh.state); },
                       {"save '", "3 epochs or steps but holds no optimizer state"});
    CHECK_FALSE(std::filesystem::exists(path));
}

namespace {
// A model with a child named "optimizer": its entries share the run's "optimizer." prefix.
struct OptimizerNamedNet : Module {
    std::shared_ptr<Linear> optimizer = register_module("optimizer", std::make_shared<Linear>(3, 2));
};
}  // namespace

TEST_CASE("run checkpoint: a child module named 'optimizer' saves and resumes with its own entries") {
    test::TempDir dir;
    const std::string path = dir.file("run.safetensors");
    manual_seed(4);
    OptimizerNamedNet net;
    optim::Adam opt{net.parameters(), optim::AdamOptions(0.01)};
    sum(net.optimizer->forward(Tensor::ones({2, 3}))).backward();
    opt.step();
    RunState state;
    state.optimizer = &opt;
    state.epoch = 1;
    save_run(path, net, state);
    manual_seed(5);
    OptimizerNamedNet other;
    optim::Adam other_opt{other.parameters(), optim::AdamOptions(0.01)};
    RunState resumed;
    resumed.optimizer = &other_opt;
    CHECK(load_run(path, other, resumed).has_run_state);
    CHECK(resumed.epoch == 1);
    CHECK(test::max_abs_diff(other.optimizer->weight.data(), net.optimizer->weight.data()) == 0.f);
    CHECK(other_opt.state_dict().tensors.size() == opt.state_dict().tensors.size());
}

TEST_CASE("run checkpoint: an optimizer index not written as state_dict() writes it is refused, naming the entry") {
    // "state.01.exp_avg" beside "state.1.exp_avg" was taken, the last of the two winning in silence
    expect_load_refused([](NamedArrays& t, auto&) {
        const NamedArrays before = t;
        for (const auto& [name, a] : before)
            if (name == "optimizer.state.1.exp_avg") t.emplace_back("optimizer.state.01.exp_avg", a);
    }, {"run.safetensors", "optimizer state: 'state.01.exp_avg' is not a 'state.<index>.<key>' entry", "no leading zero"});
    for (const char* index : {"01", "+1", "00", "1 ", "0x1"})
        expect_load_refused([&](NamedArrays& t, auto&) {
            for (auto& [name, a] : t)
                if (name == "optimizer.state.1.step") name = fmt::format("optimizer.state.{}.step", index);
        }, {"run.safetensors", fmt::format("'state.{}.step' is not a 'state.<index>.<key>' entry", index).c_str()});
}

TEST_CASE("run checkpoint: a step count past 2^24 is refused naming that limit, on load and on save") {
    // 16777218 is a whole number and a float32: the messages said "whole number >= 1" and "does not fit float32"
    const auto steps_are = [](float step) {
        return [=](NamedArrays& t, auto&) {
            for (auto& [name, a] : t)
                if (name.ends_with(".step")) a = Array(step);
        };
    };
    expect_load_refused(steps_are(16777218.f),
                        {"run.safetensors", "'state.0.step' must be one whole number in [1, 16777216] (2^24", "value 16777218"});
    // 2^24 itself loads; one step more and save_run refuses, writing nothing
    test::TempDir dir;
    const std::string path = dir.file("run.safetensors");
    HostileRun run;
    run.steps(2);
    save_run(path, run.net, run.state);
    SafetensorsFile file = load_safetensors(path);
    steps_are(16777216.f)(file.tensors, file.metadata);
    save_safetensors(path, file.tensors, file.metadata);
    HostileRun resumed;
    load_run(path, resumed.net, resumed.state);
    CHECK(resumed.opt.step_count(resumed.net.fc->weight) == 16777216);
    resumed.steps(1);
    const std::string before = test::read_bytes(path);
    test::expect_error([&] { save_run(path, resumed.net, resumed.state); },
                       {"parameter 0 took 16777217 steps, more than the 16777216 (2^24) a state holds"});
    CHECK(test::read_bytes(path) == before);
}

TEST_CASE("run checkpoint: unexpected names are escaped, and a long list of them is cut after 10") {
    // a NUL cut the message ("unexpected keys: fc.bias"), a newline or an escape went raw to the
    // terminal, and 40 094 names made a 40 094-line message
    const auto extra_names = [](NamedArrays& t, auto&) {
        t.emplace_back(std::string("fc.bias\0x", 9), zero_array(Shape{2}));
        for (int i = 0; i < 40; ++i) t.emplace_back(fmt::format("extra\n\x1b[2J{}", i), zero_array(Shape{1}));
    };
    expect_load_refused(extra_names, {"unexpected keys (41):\n    fc.bias\\x00x\n    extra\\x0a\\x1b[2J0\n",
                                      "extra\\x0a\\x1b[2J8\n    ... and 31 more"});
    test::TempDir dir;
    const std::string path = dir.file("run.safetensors");
    HostileRun run;
    save(run.net, path);
    SafetensorsFile file = load_safetensors(path);
    extra_names(file.tensors, file.metadata);
    save_safetensors(path, file.tensors, file.metadata);
    try {
        nn::load(run.net, path);
        FAIL("expected an Error");
    } catch (const Error& e) {
        const std::string message = e.what();
        CHECK(std::count(message.begin(), message.end(), '\n') == 12);  // the title, the list's, 10 names, "... and"
        CHECK(message.find('\x1b') == std::string::npos);
    }
}

TEST_SUITE_END();
