// RunReport::continue_from (a resumed run's page keeps the steps before the resume) and
// RunReport::result (the run's outcome on the page): docs/report.md. The earlier page is outside
// data: a page of another shape is an Error naming the field, and nothing is kept.
#include <xtgrad/report/run_report.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/nn/layers.hpp>
#include <xtgrad/optim/optimizer.hpp>
#include "tests/io/io_test_util.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

TEST_SUITE_BEGIN("debug");

using namespace xtgrad;
using nlohmann::json;
using xtgrad::test::TempDir;

namespace {

// Steps [first, last] of a tiny Linear run into `report`, logging loss and lr.
void train(RunReport& report, nn::Linear& model, optim::SGD& opt, long first, long last) {
    const Tensor x = Tensor::from_vector({0.5f, -1.f, 1.5f, 2.f}, {2, 2});
    for (long step = first; step <= last; ++step) {
        report.begin_step(step);
        opt.zero_grad();
        Tensor loss = cross_entropy(model.forward(x), Ids{1, 0});
        report.backward(loss);
        report.gradients();
        opt.step();
        report.end_step({{"loss", step == 2 ? std::nan("") : loss.item()}, {"lr", opt.lr()}});
    }
}

}  // namespace

TEST_CASE("RunReport::continue_from: a resumed run's page keeps the earlier page's steps up to the resume") {
    TempDir dir;
    nn::Linear model(2, 2);
    optim::SGD opt(model.parameters(), optim::SGDOptions(0.1));
    RunReport first(dir.file("first.html"), {.write_interval = 0});
    first.attach(model);
    train(first, model, opt, 1, 5);  // the earlier run went on to step 5; its checkpoint was of step 3
    first.finish();

    RunReport resumed(dir.file("resumed.html"), {.write_interval = 0});
    resumed.attach(model);
    resumed.continue_from(report::read_data(dir.file("first.html")), 3);
    CHECK_THROWS_WITH_AS(resumed.begin_step(3), doctest::Contains("steps must increase, got 3 after 3"), Error);
    train(resumed, model, opt, 4, 6);
    resumed.finish();
    const json page = json::parse(report::read_data(dir.file("resumed.html")));
    const json earlier = json::parse(report::read_data(dir.file("first.html")));
    CHECK(page["scalars"]["loss"]["step"] == json({1, 2, 3, 4, 5, 6}));
    CHECK(page["scalars"]["loss"]["value"][0] == earlier["scalars"]["loss"]["value"][0]);
    CHECK(page["scalars"]["loss"]["value"][1] == "nan");  // kept as the earlier page wrote it
    CHECK(page["stats"]["step"] == json({1, 2, 3, 4, 5, 6}));
    REQUIRE(earlier["stats"]["grad_norm"].size() == 1);
    const std::string module = earlier["stats"]["grad_norm"].begin().key();
    CHECK(page["stats"]["grad_norm"][module][2] == earlier["stats"]["grad_norm"][module][2]);
    CHECK(page["stats"]["grad_norm"][module].size() == 6);
    CHECK(page["resumed_after"] == 3);

    RunReport late(dir.file("late.html"));
    late.begin_step(1);
    CHECK_THROWS_WITH_AS(late.continue_from(report::read_data(dir.file("first.html")), 3),
                         doctest::Contains("call it before the first begin_step"), Error);
}

TEST_CASE("RunReport::continue_from: an earlier page of another shape is an Error naming the field; nothing is kept") {
    TempDir dir;
    RunReport report(dir.file("report.html"));
    const std::string before = report.data_json();
    const std::pair<const char*, const char*> bad[] = {
        {R"({"scalars": {"loss": {"step": [1, 2], "value": [1, "x"]}}})", "scalars.loss.value holds \"x\""},
        {R"({"scalars": {"loss": {"step": [2, 1], "value": [1, 2]}}})", "scalars.loss.step does not increase (1 after 2)"},
        {R"({"scalars": {"loss": {"step": [1, -4], "value": [1, 2]}}})", "not a step (a whole number from 0 to 2^53)"},
        {R"({"scalars": {"loss": {"step": [1, 2], "value": [1]}}})", "scalars.loss.value is not a list of at least 2 values"},
        {R"({"scalars": {"loss": {"step": [1], "value": [null]}}})", "scalars.loss.value[0] is null"},
        {R"({"scalars": {"loss": 3}})", "scalars.loss has no steps"},
        {R"({"scalars": {}, "stats": {"step": [1], "grad_norm": {"fc": []}}})", "stats.grad_norm.fc is not a list of at least 1"},
        {R"({"scalars": {}, "stats": {"step": [1], "act_std": [1]}})", "stats.act_std is not an object of modules"},
        {R"({"title": "no scalars"})", "is not a report's (no scalars)"},
        {"{\"scalars\": ", "is not JSON"},
    };
    for (const auto& entry : bad) {
        const char *const data = entry.first, *const words = entry.second;  // not bindings: CAPTURE's lambda takes data
        CAPTURE(data);
        CHECK_THROWS_WITH_AS(report.continue_from(data, 10), doctest::Contains(words), Error);
        CHECK(report.data_json() == before);
    }
    report.begin_step(0);  // nothing was kept: step 0 still opens
}

TEST_CASE("RunReport::result: the run's outcome on the page, named, in order; a name again replaces its text") {
    TempDir dir;
    RunReport report(dir.file("report.html"));
    report.result("source", "I like the 2022 Beijing Winter Games");
    report.result("greedy", "wrong");
    report.result("teacher-forced", "\xE6\x88\x91 \xE7\x88\xB1");
    report.result("greedy", "\xE6\x88\x91 \xE7\x88\xB1 2022");
    report.result("bytes", "caf\xE9");
    const json results = json::parse(report.data_json())["results"];
    REQUIRE(results.size() == 4);
    CHECK(results[0] == json({{"name", "source"}, {"text", "I like the 2022 Beijing Winter Games"}}));
    CHECK(results[1] == json({{"name", "greedy"}, {"text", "\xE6\x88\x91 \xE7\x88\xB1 2022"}}));
    CHECK(results[2]["name"] == "teacher-forced");
    CHECK(results[3]["text"] == "caf\xEF\xBF\xBD");  // not UTF-8: U+FFFD, and noted
    CHECK(json::parse(report.data_json())["notes"].dump().find("the text of a result") != std::string::npos);
    const std::string before = report.data_json();
    CHECK_THROWS_WITH_AS(report.result("", "text"), doctest::Contains("RunReport::result: the name is empty"), Error);
    CHECK(report.data_json() == before);
    RunReport off("");
    CHECK_NOTHROW(off.result("", ""));  // a report that is off does nothing
}

TEST_SUITE_END();
