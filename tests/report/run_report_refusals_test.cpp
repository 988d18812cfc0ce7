// RunReport against what a user may hand it (report/run_report.hpp, docs/reliability.md): text
// that is not UTF-8, attention weights of a batch of 0 or with NaN, non-finite losses, steps out of
// order, a second attach, and a run that ends in an error. Every refused call is an Error naming
// the call and changes nothing: the report's data is the same before and after it.
#include <xtgrad/report/run_report.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/nn/layers.hpp>
#include <xtgrad/optim/optimizer.hpp>
#include <xtgrad/random/random.hpp>
#include <xtgrad/report/page.hpp>
#include "tests/io/io_test_util.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>

TEST_SUITE_BEGIN("debug");

using namespace xtgrad;
using nlohmann::json;
using xtgrad::test::TempDir;

namespace {

const std::string kRefusalFffd = "\xEF\xBF\xBD";  // U+FFFD
constexpr double kRefusalNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kRefusalInf = std::numeric_limits<double>::infinity();

// A model whose child has a Latin-1 name ("caf\xE9"), as a byte-level vocabulary might give.
class Latin1Mlp : public nn::Module {
public:
    Latin1Mlp() {
        fc = register_module("caf\xE9", std::make_shared<nn::Linear>(2, 2));
    }
    Tensor forward(const Tensor& x) const {
        auto scope = enter(x);
        return scope.output(fc->forward(x));
    }
    std::shared_ptr<nn::Linear> fc;
};

const Tensor kRefusalInput = Tensor::from_vector({0.5f, -1.f, 1.5f, 2.f}, {2, 2});
const Ids kRefusalTarget{1, 0};

// (B, heads, queries, keys) = (1, 2, 2, 2)
Tensor refusal_two_heads() { return Tensor::from_vector({1.f, 0.f, 0.4f, 0.6f, 0.5f, 0.5f, 0.2f, 0.8f}, {1, 2, 2, 2}); }

// `call` must throw an Error containing `words` and leave the report's data as it was.
void refused(const RunReport& report, const std::function<void()>& call, const std::string& words) {
    const std::string before = report.data_json();
    CHECK_THROWS_WITH_AS(call(), doctest::Contains(words.c_str()), Error);
    CHECK(report.data_json() == before);
}

}  // namespace

TEST_CASE("RunReport: labels that are not UTF-8 never stop the run: shown as U+FFFD, and the page says so") {
    TempDir dir;
    const std::string path = dir.file("report.html");
    Latin1Mlp model;
    optim::SGD opt(model.parameters(), optim::SGDOptions(0.1));
    {
        // docs/report.md's loop, with a Latin-1 title, scalar name and token label: end_step threw
        // nlohmann's type_error 316 at step 1 and no page was written
        RunReport report(path, {.title = "r\xE9sum\xE9", .write_interval = 0});
        report.attach(model);
        for (long step = 1; step <= 2; ++step) {
            report.begin_step(step);
            opt.zero_grad();
            Tensor loss = cross_entropy(model.forward(kRefusalInput), kRefusalTarget);
            report.backward(loss);
            report.gradients();
            opt.step();
            CHECK_NOTHROW(report.end_step({{"lo\xFFss", loss.item()}}));
        }
        report.attention("self\xC0", {refusal_two_heads()}, {"\xE9t\xE9", "b"}, {"a", "b"});
        CHECK_NOTHROW(report.finish());
    }
    const json data = json::parse(report::read_data(path));  // valid UTF-8, or parse would throw
    CHECK(data["title"] == "r" + kRefusalFffd + "sum" + kRefusalFffd);
    CHECK(data["scalars"].contains("lo" + kRefusalFffd + "ss"));
    CHECK(data["stats"]["modules"][1] == "caf" + kRefusalFffd);
    CHECK(data["stats"]["grad_norm"].contains("caf" + kRefusalFffd));
    CHECK(data["attention"][0]["kind"] == "self" + kRefusalFffd);
    CHECK(data["attention"][0]["queries"][0] == kRefusalFffd + "t" + kRefusalFffd);
    const std::string notes = data["notes"].dump();
    for (const char* what : {"the title", "scalar name", "module name", "attention kind", "a token label"}) {
        CAPTURE(what);
        CHECK(notes.find(what) != std::string::npos);
    }
    // Well-formed multi-byte text is kept as it is
    RunReport plain(dir.file("plain.html"), {.title = "\xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"});
    CHECK(json::parse(plain.data_json())["title"] == "\xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
    CHECK(json::parse(plain.data_json())["notes"].empty());
}

TEST_CASE("report::check_data names the source and the field of text that is not JSON, and bounds the nesting") {
    const std::string who = "report_compare: 'old/report.html'";
    // a page written before labels were made UTF-8
    CHECK_THROWS_WITH_AS(report::check_data("{\"scalars\": {}, \"title\": \"caf\xE9\"}", who),
                         doctest::Contains("report_compare: 'old/report.html' is not JSON (in title)"), Error);
    CHECK_THROWS_WITH_AS(report::check_data("{\"scalars\": {\"loss\": {\"step\": [1, 2], \"value\": [1, x]}}}", who),
                         doctest::Contains("(in scalars.loss.value[1])"), Error);
    CHECK_THROWS_WITH_AS(report::check_data("{\"scalars\": {\"loss\": 1, \"l\xE9\": 2}}", who),
                         doctest::Contains("(in scalars.(the key after 'loss'))"), Error);
    // 100 000 deep (200 KB): the comparison crashed (SIGSEGV) in recursion
    const std::string deep = "{\"scalars\": {}, \"x\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
    CHECK_THROWS_WITH_AS(report::check_data(deep, who),
                         "report_compare: 'old/report.html' nests lists and objects more than 16 deep", Error);
    TempDir dir;
    xtgrad::test::write_bytes(dir.file("deep.html"), report::page_html(deep, false));  // the same inside a report.html
    CHECK_THROWS_WITH_AS(report::check_data(report::read_data(dir.file("deep.html")), who),
                         doctest::Contains("nests lists and objects more than 16 deep"), Error);
    CHECK_THROWS_WITH_AS(report::write_comparison(dir.file("c.html"), {{"deep", deep}}),
                         "report::write_comparison: the data of 'deep' nests lists and objects more than 16 deep", Error);
    CHECK_THROWS_WITH_AS(report::check_data("[1, 2]", who), "report_compare: 'old/report.html' is not a report's (no scalars)", Error);
    RunReport real(dir.file("r.html"));
    real.log(1, "loss", 1.0);
    CHECK_NOTHROW(report::check_data(real.data_json(), who));
}

TEST_CASE("RunReport::attention: a batch of 0, NaN weights and bad shapes are refused, naming them, and change nothing") {
    TempDir dir;
    RunReport report(dir.file("r.html"));
    report.attention("self", {refusal_two_heads()}, {"a", "b"}, {"a", "b"});
    report.attention("cross", {refusal_two_heads()}, {"a", "b"}, {"a", "b"});
    const std::vector<std::string> ab{"a", "b"};
    // tutorial D returns (0, heads, q, k) weights for N = 0: element 0 was read from an empty array
    refused(report, [&] { report.attention("self", {Tensor::zeros({0, 2, 2, 2})}, ab, ab); },
            "RunReport::attention: 'self' layer 0: weights (0,2,2,2) have a batch of 0: no batch element to show");
    refused(report, [&] { report.attention("self", {Tensor::zeros({0, 2, 2})}, ab, ab, 1); },
            "RunReport::attention: 'self' layer 0: weights (0,2,2) have a batch of 0");
    Mask empty_batch = Mask::from_shape({0, 2, 2});
    refused(report, [&] { report.attention("self", {refusal_two_heads()}, ab, ab, 0, &empty_batch); },
            "RunReport::attention: 'self': mask (0,2,2) has a batch of 0");
    // NaN weights were accepted and stopped the page's heatmap at the first NaN cell
    Tensor nan_weights = refusal_two_heads();
    nan_weights.mutable_data()(0, 1, 1, 0) = std::numeric_limits<float>::quiet_NaN();
    refused(report, [&] { report.attention("self", {refusal_two_heads(), nan_weights}, ab, ab); },
            "RunReport::attention: 'self' layer 1 head 1: the weight of query 1 for key 0 is nan");
    Tensor inf_weights = refusal_two_heads();
    inf_weights.mutable_data()(0, 0, 0, 1) = std::numeric_limits<float>::infinity();
    refused(report, [&] { report.attention("self", {inf_weights}, ab, ab); }, "head 0: the weight of query 0 for key 1 is inf");
    // a refused call used to leave every map recorded before it as null (moved from)
    refused(report, [&] { report.attention("self", {refusal_two_heads(), Tensor::zeros({2, 2})}, ab, ab); }, "layer 1: weights (2,2) are neither");
    refused(report, [&] { report.attention("self", {refusal_two_heads()}, {"a"}, ab); }, "1 query and 2 key labels");
    Mask flat = Mask::from_shape({2});
    refused(report, [&] { report.attention("self", {refusal_two_heads()}, ab, ab, 0, &flat); }, "mask (2) is neither");
    // a head count that does not fit the weights recorded maps of the wrong rows (6 rows as 4 heads)
    refused(report, [&] { report.attention("self", {Tensor::full({6, 2, 2}, 0.5f)}, ab, ab, 4); },
            "weights (6,2,2) are not a whole number of batches of 4 heads");
    refused(report, [&] { report.attention("self", {refusal_two_heads()}, ab, ab, 3); },
            "weights (1,2,2,2) have 2 heads, the call says 3");
    const json maps = json::parse(report.data_json())["attention"];
    REQUIRE(maps.size() == 4);
    for (const json& m : maps) CHECK(m["weights"].is_array());
}

TEST_CASE("RunReport::attention: maps past the limits of a map or of the report are refused, and a full page stays a few MB") {
    TempDir dir;
    RunReport report(dir.file("r.html"));
    const auto labels = [](std::size_t n) {
        std::vector<std::string> l;
        for (std::size_t i = 0; i < n; ++i) l.push_back(std::to_string(i));
        return l;
    };
    // weights as softmax gives them: floats whose JSON text is long (0.0123456791043282)
    const auto weights = [](std::size_t heads, std::size_t q, std::size_t k) {
        Generator g(3);
        return rand({1, heads, q, k}, g);
    };
    // the tutorials' own: random_copy's 32 tokens, 6 layers of 8 heads, 3 kinds (147 456 cells), masked
    Mask causal = Mask::from_shape({32, 32});
    for (std::size_t i = 0; i < 32; ++i)
        for (std::size_t j = 0; j < 32; ++j) causal(i, j) = j > i;
    for (const char* kind : {"encoder self-attention", "decoder self-attention", "decoder-encoder attention"})
        report.attention(kind, std::vector<Tensor>(6, weights(8, 32, 32)), labels(32), labels(32), 0, &causal);
    CHECK(json::parse(report.data_json())["attention"].size() == 144);
    // one map past 512 queries or keys, or past 128 × 128 cells (a 1000 × 1000 map of 8 heads was a 176 MB page)
    refused(report, [&] { report.attention("big", {weights(1, 513, 2)}, labels(513), labels(2)); },
            "RunReport::attention: 'big' layer 0: weights (1,1,513,2) make maps of 513 queries × 2 keys, past the limit of "
            "512 queries or keys and 16384 cells a map (RunReport::kMaxAttentionTokens, kMaxAttentionMapCells)");
    refused(report, [&] { report.attention("big", {weights(1, 200, 100)}, labels(200), labels(100)); },
            "'big' layer 0: weights (1,1,200,100) make maps of 200 queries × 100 keys, past the limit");
    refused(report, [&] { report.attention("big", {weights(1, 129, 128)}, labels(129), labels(128)); },
            "129 queries × 128 keys, past the limit");
    // the report's total over its kinds: 147 456 kept + 2 layers of 8 · 96 · 96 = 73 728 each
    refused(report, [&] { report.attention("more", std::vector<Tensor>(2, weights(8, 96, 96)), labels(96), labels(96)); },
            "RunReport::attention: 'more': its maps through layer 1 (8 heads of 96 × 96 there) hold 147456 cells and the "
            "report's other attention kinds 147456: past the limit of 262144 cells a report holds");
    // a kind's own earlier maps do not count, as they are replaced: 2 · 49 152 + 10 · 128 · 128 is the limit
    report.attention("decoder self-attention", {weights(10, 128, 128)}, labels(128), labels(128));
    report.attention("decoder self-attention", {weights(10, 128, 128)}, labels(128), labels(128));
    CHECK(json::parse(report.data_json())["attention"].size() == 106);
    refused(report, [&] { report.attention("more", {weights(1, 1, 1)}, labels(1), labels(1)); },
            "hold 1 cells and the report's other attention kinds 262144: past the limit of 262144");
    CHECK(RunReport::kMaxAttentionCells == 262144);
    // the page at the limit: a few MB (5.4 MB)
    report.write();
    const std::size_t bytes = test::read_bytes(dir.file("r.html")).size();
    CAPTURE(bytes);
    CHECK(bytes < 8'000'000);
}

TEST_CASE("RunReport::attention: at most kMaxAttentionKinds kinds, and an undefined layer named") {
    TempDir dir;
    RunReport report(dir.file("r.html"));
    const std::vector<std::string> l2{"a", "b"};
    const Tensor w = Tensor::full({1, 1, 2, 2}, 0.5f);
    for (std::size_t i = 0; i < RunReport::kMaxAttentionKinds; ++i) report.attention(fmt::format("kind {}", i), {w}, l2, l2);
    refused(report, [&] { report.attention("one more", {w}, l2, l2); },
            "RunReport::attention: 'one more' would be a kind past the 64 a report holds");
    report.attention("kind 3", {w, w}, l2, l2);  // a kind given again replaces its maps
    CHECK(json::parse(report.data_json())["attention"].size() == RunReport::kMaxAttentionKinds + 1);
    refused(report, [&] { report.attention("kind 5", {w, Tensor()}, l2, l2); },
            "RunReport::attention: 'kind 5' layer 1: the weights tensor is undefined");
}

TEST_CASE("RunReport: steps from 0 that increase, one attach; refused calls change nothing") {
    TempDir dir;
    RunReport report(dir.file("r.html"));
    nn::Linear model(2, 2);
    report.attach(model);
    // twice listed every module twice
    refused(report, [&] { report.attach(model); }, "RunReport::attach: a model is attached already");
    refused(report, [&] { report.end_step({{"loss", 1.0}}); }, "RunReport::end_step: no step is open");
    report.begin_step(0);  // a loop counting from 0
    report.end_step({{"loss", 1.0}});
    // 0 was also the "no step yet" guard: 0, 0, -5 were accepted
    refused(report, [&] { report.begin_step(0); }, "RunReport::begin_step: steps must increase, got 0 after 0");
    refused(report, [&] { report.begin_step(-5); }, "RunReport::begin_step: step -5 is negative");
    report.begin_step(1);
    report.end_step({{"loss", 0.5}});
    CHECK(json::parse(report.data_json())["scalars"]["loss"]["step"] == json({0, 1}));
    CHECK(json::parse(report.data_json())["stats"]["modules"] == json({"(model)"}));

    RunReport fresh(dir.file("f.html"));
    refused(fresh, [&] { fresh.begin_step(-1); }, "step -1 is negative");
    // what continue_from refuses to read back is not logged either (a resumed run lost its curves)
    refused(fresh, [&] { fresh.log(-5, "val", 1.0); }, "RunReport::log: scalar 'val' at step -5");
    fresh.log(3, "val", 1.0);
    refused(fresh, [&] { fresh.log(3, "val", 2.0); }, "scalar 'val' at step 3 after step 3");
    refused(fresh, [&] { fresh.log(1, "val", 2.0); }, "a scalar's steps must increase");
    fresh.begin_step(4);
    refused(fresh, [&] { fresh.end_step({{"loss", 1.0}, {"loss", 2.0}}); }, "RunReport::end_step: scalar 'loss' is given twice");
    refused(fresh, [&] { fresh.end_step({{"acc", 1.0}, {"val", 2.0}, {"val", 3.0}}); }, "'val' is given twice");
    fresh.end_step({{"loss", 1.0}, {"val", 2.0}});
    RunReport resumed(dir.file("resumed.html"));
    refused(resumed, [&] { resumed.continue_from(fresh.data_json(), -7); }, "through_step -7 must be >= 0");

    // a page that cannot be written: finish() throws and the run is not over for the report
    RunReport lost(dir.file("gone/r.html"));
    lost.log(1, "loss", 1.0);
    refused(lost, [&] { lost.finish(); }, "gone/r.html");
    refused(lost, [&] { lost.finish_with_error("diverged"); }, "gone/r.html");
    CHECK(json::parse(lost.data_json())["outcome"] == "running");
}

TEST_CASE("RunReport keeps NaN and infinite values apart from values not measured") {
    TempDir dir;
    RunReport report(dir.file("r.html"));
    nn::Linear model(2, 2);
    report.attach(model);
    report.begin_step(1);
    report.end_step({{"loss", 1.0}});  // no gradients(): the module's gradient is not measured
    report.begin_step(2);
    report.end_step({{"loss", kRefusalNan}});
    report.begin_step(3);
    report.end_step({{"loss", kRefusalInf}});
    report.log(3, "val_loss", -kRefusalInf);
    const json data = json::parse(report.data_json());
    // all three were null, the same as "not measured"
    CHECK(data["scalars"]["loss"]["value"] == json({1.0, "nan", "inf"}));
    CHECK(data["scalars"]["val_loss"]["value"] == json({"-inf"}));
    CHECK(data["stats"]["grad_norm"].empty());  // never measured: no curve, not a curve of NaN

    RunReport stats(dir.file("s.html"));
    nn::Linear nan_model(2, 2);
    nan_model.weight.mutable_data()(0, 0) = std::numeric_limits<float>::quiet_NaN();
    stats.attach(nan_model);
    stats.begin_step(1);
    Tensor loss = sum(nan_model.forward(kRefusalInput));
    stats.backward(loss);
    stats.gradients();
    stats.end_step({{"loss", loss.item()}});
    const json st = json::parse(stats.data_json())["stats"];
    CHECK(st["act_mean"]["(model)"] == json({"nan"}));
    CHECK(st["act_std"]["(model)"] == json({"nan"}));  // was 0: max(0, NaN) is 0
    CHECK(st["grad_norm"]["(model)"][0].is_number());  // the gradient of a sum does not see the NaN weight
    CHECK(st["update_ratio"]["(model)"] == json({"nan"}));  // was null: NaN > 0 is false
}

TEST_CASE("RunReport: a run that ends in an error says so, not \"finished\"") {
    TempDir dir;
    const auto outcome = [&](const std::string& file) {
        const json data = json::parse(report::read_data(dir.file(file)));
        return std::make_pair(data["outcome"].get<std::string>(), data["error"]);
    };
    {
        RunReport report(dir.file("ok.html"));
        report.log(1, "loss", 1.0);
    }
    CHECK(outcome("ok.html") == std::make_pair(std::string("finished"), json(nullptr)));
    try {  // a NaN guard's exception leaves the loop: the destructor runs while the stack unwinds
        RunReport report(dir.file("thrown.html"));
        report.log(1, "loss", kRefusalNan);
        throw std::runtime_error("loss is nan at step 1");
    } catch (const std::runtime_error&) {
    }
    CHECK(outcome("thrown.html").first == "error");
    CHECK(outcome("thrown.html").second.get<std::string>().find("exception") != std::string::npos);
    {
        RunReport report(dir.file("explicit.html"));
        report.log(1, "loss", kRefusalNan);
        report.finish_with_error("loss is nan at step 1");
        CHECK(json::parse(report.data_json())["live"] == false);
    }
    CHECK(outcome("explicit.html") == std::make_pair(std::string("error"), json("loss is nan at step 1")));
    RunReport running(dir.file("running.html"));
    CHECK(json::parse(running.data_json())["outcome"] == "running");
    running.finish();
}

TEST_SUITE_END();
