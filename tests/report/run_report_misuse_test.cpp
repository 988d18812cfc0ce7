// RunReport's calls out of order or past their range (report/run_report.hpp, docs/reliability.md):
// a step begun twice, continue_from after a log, steps past 2^53, calls after finish(), and
// report_compare's data of a shape the page's script cannot read. Each was silent garbage, a
// page the next resume refused, a page that hung, or a line lost without a word.
#include <xtgrad/report/run_report.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/nn/layers.hpp>
#include <xtgrad/optim/optimizer.hpp>
#include "tests/io/io_test_util.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <string>

TEST_SUITE_BEGIN("debug");

using namespace xtgrad;
using nlohmann::json;
using xtgrad::test::TempDir;

namespace {

const Tensor kMisuseInput = Tensor::from_vector({0.5f, -1.f, 1.5f, 2.f}, {2, 2});

// `call` must throw an Error containing `words` and leave the report's data as it was.
void misuse_refused(const RunReport& report, const std::function<void()>& call, const std::string& words) {
    const std::string before = report.data_json();
    CHECK_THROWS_WITH_AS(call(), doctest::Contains(words.c_str()), Error);
    CHECK(report.data_json() == before);
}

}  // namespace

TEST_CASE("RunReport::begin_step again before end_step drops the weights the open step copied") {
    TempDir dir;
    nn::Linear model(2, 2);
    optim::SGD opt(model.parameters(), optim::SGDOptions(0.1));
    RunReport report(dir.file("r.html"));
    report.attach(model);
    report.begin_step(1);  // a step given up after the update (a batch skipped by the program)
    opt.zero_grad();
    report.backward(sum(model.forward(kMisuseInput)));
    report.gradients();
    opt.step();
    report.begin_step(2);  // no gradients(), no update: nothing to measure
    report.end_step({{"loss", 1.0}});
    // was 0.46: step 1's weights before its update, measured as step 2's update
    CHECK(json::parse(report.data_json())["stats"]["update_ratio"].empty());
}

TEST_CASE("RunReport::continue_from after a log is refused: the kept steps would not increase") {
    TempDir dir;
    RunReport earlier(dir.file("a.html"));
    for (long s = 0; s <= 3; ++s) earlier.log(s, "val", 1.0 * static_cast<double>(s));
    RunReport report(dir.file("b.html"));
    report.log(0, "val", 9.0);  // an evaluation before training
    // was kept: "val" at steps 0, 0, 1, ..., a page the next resume refused ("does not increase")
    misuse_refused(report, [&] { report.continue_from(earlier.data_json(), 3); }, "the report has steps already");
    RunReport twice(dir.file("c.html"));
    twice.continue_from(earlier.data_json(), 3);
    misuse_refused(twice, [&] { twice.continue_from(earlier.data_json(), 3); }, "call it before the first begin_step or log, once");
    // the refused call kept nothing: "val" still holds the one evaluation, at step 0
    const auto val = nlohmann::json::parse(report.data_json()).at("scalars").at("val");
    CHECK(val.at("step") == nlohmann::json::array({0}));
    CHECK(val.at("value") == nlohmann::json::array({9.0}));
}

TEST_CASE("RunReport: steps past 2^53 are refused, and so is an earlier page holding one") {
    TempDir dir;
    RunReport report(dir.file("r.html"));
    // the page's script held 2^60 as a double: its axis loop's k++ never moved, and the page hung
    misuse_refused(report, [&] { report.begin_step(RunReport::kMaxStep + 1); }, "step 9007199254740993 is above");
    misuse_refused(report, [&] { report.log(long{1} << 60, "val", 1.0); }, "a whole number from 0 to 9007199254740992");
    report.begin_step(RunReport::kMaxStep);  // the last exact one
    report.end_step({{"loss", 1.0}});
    const std::string forged = R"({"scalars": {"loss": {"step": [1, 1152921504606846976], "value": [1, 2]}}})";
    RunReport resumed(dir.file("s.html"));
    misuse_refused(resumed, [&] { resumed.continue_from(forged, RunReport::kMaxStep); },
                   "scalars.loss.step holds 1152921504606846976, not a step");
    // the last exact step was kept, the refused ones not
    const auto loss = nlohmann::json::parse(report.data_json()).at("scalars").at("loss");
    CHECK(loss.at("step") == nlohmann::json::array({RunReport::kMaxStep}));
    CHECK(nlohmann::json::parse(report.data_json()).at("scalars").count("val") == 0);
}

TEST_CASE("RunReport: calls that change the page after finish() are refused; it was written for the last time") {
    TempDir dir;
    nn::Linear model(2, 2);
    RunReport report(dir.file("r.html"));
    report.begin_step(1);
    report.end_step({{"loss", 1.0}});
    report.finish();
    // each was kept in memory only: the page on disk never showed it, and nothing said so
    misuse_refused(report, [&] { report.result("accuracy", "97 %"); }, "RunReport::result: the report is finished");
    misuse_refused(report, [&] { report.log(2, "val", 1.0); }, "RunReport::log: the report is finished");
    misuse_refused(report, [&] { report.begin_step(2); }, "RunReport::begin_step: the report is finished");
    misuse_refused(report, [&] { report.end_step({}); }, "RunReport::end_step: the report is finished");
    misuse_refused(report, [&] { report.attach(model); }, "RunReport::attach: the report is finished");
    misuse_refused(report, [&] { report.attention("self", {}, {}, {}); }, "RunReport::attention: the report is finished");
    misuse_refused(report, [&] { report.continue_from("{}", 1); }, "RunReport::continue_from: the report is finished");
    Tensor loss = sum(model.forward(kMisuseInput));
    report.backward(loss);  // still the training's backward
    CHECK(model.weight.has_grad());
    CHECK(json::parse(report::read_data(dir.file("r.html"))) == json::parse(report.data_json()));
}

TEST_CASE("report::check_data refuses data whose lists the page's script cannot read") {
    TempDir dir;
    const auto refused_data = [&](const std::string& data, const std::string& words) {
        CHECK_THROWS_WITH_AS(report::check_data(data, "the report data of 'x.json'"), doctest::Contains(words.c_str()), Error);
        // the comparison page of it threw in its script ("reading 'map'") and showed no curve
        CHECK_THROWS_AS(report::write_comparison(dir.file("c.html"), {{"x", data}}), Error);
        CHECK(dir.entries().empty());
    };
    refused_data(R"({"scalars": {"loss": 5}})", "the report data of 'x.json': scalars.loss has no steps");
    refused_data(R"({"scalars": {"loss": {"step": [1, 2], "value": [1]}}})", "scalars.loss.value is not a list of at least 2");
    refused_data(R"({"scalars": {"loss": {"step": [2, 1], "value": [1, 2]}}})", "scalars.loss.step does not increase (1 after 2)");
    refused_data(R"({"scalars": {"loss": {"step": [1], "value": ["x"]}}})", "scalars.loss.value holds \"x\"");
    refused_data(R"({"scalars": {"loss": {"step": [1e17], "value": [1]}}})", "not a step");
    refused_data(R"({"scalars": {}, "stats": {"step": [1], "grad_norm": {"fc": 3}}})", "stats.grad_norm.fc is not a list");
    // a page from before NaN was written "nan" wrote null: a gap in its curve, still compared
    const std::string old = R"({"scalars": {"loss": {"step": [1, 2], "value": [1.5, null]}}, "title": "old"})";
    CHECK_NOTHROW(report::check_data(old, "old"));
    CHECK_NOTHROW(report::write_comparison(dir.file("c.html"), {{"old", old}}));
}

TEST_CASE("RunReport: a graph_depth below -1 is refused, as the other options are") {
    // was taken as "no limit": -5 drew the whole graph, nothing said
    CHECK_THROWS_WITH_AS(RunReport("r.html", {.graph_depth = -5}), "RunReport: graph_depth must be -1 (no limit) or >= 0, got -5",
                         Error);
    TempDir dir;
    CHECK_NOTHROW(RunReport(dir.file("r.html"), {.graph_depth = 0}).finish());
}

TEST_SUITE_END();
