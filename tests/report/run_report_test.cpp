// Tests of report/run_report.hpp: the numbers a report records, the page rewritten atomically
// and live until finish(), labels that cannot break the page, the graph's node data, the
// comparison page, and errors for bad input. (The page itself is tested in Chromium:
// tests/report/browser_test.py.)
#include <xtgrad/report/run_report.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/nn/layers.hpp>
#include <xtgrad/optim/optimizer.hpp>
#include <xtgrad/report/page.hpp>
#include "tests/io/io_test_util.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <optional>
#include <set>
#include <string>

TEST_SUITE_BEGIN("debug");

using namespace xtgrad;
using nlohmann::json;
using xtgrad::test::read_bytes;
using xtgrad::test::TempDir;

namespace {

class ReportMlp : public nn::Module {
public:
    ReportMlp() {
        fc1 = register_module("fc1", std::make_shared<nn::Linear>(2, 3));
        fc2 = register_module("fc2", std::make_shared<nn::Linear>(3, 2));
    }
    Tensor forward(const Tensor& x) const {
        auto scope = enter(x);
        return scope.output(fc2->forward(relu(fc1->forward(x))));
    }
    std::shared_ptr<nn::Linear> fc1, fc2;
};

double report_squared(const Array& a) {
    double s = 0;
    for (float v : a) s += static_cast<double>(v) * v;
    return s;
}

std::size_t occurrences(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

const Tensor kReportInput = Tensor::from_vector({0.5f, -1.f, 1.5f, 2.f, -0.3f, 0.7f}, {3, 2});
const Ids kReportTarget{1, 0, 1};

}  // namespace

TEST_CASE("RunReport records the losses, per-module gradient norms, update ratios and activations") {
    TempDir dir;
    manual_seed(1);
    ReportMlp model;
    optim::SGD opt(model.parameters(), optim::SGDOptions(0.1));
    RunReport report(dir.file("report.html"), {.title = "mlp", .write_interval = 0});
    report.attach(model);
    double fc1_grad = 0, fc1_ratio = 0, fc1_mean = 0;
    std::vector<double> losses;
    for (long step = 1; step <= 3; ++step) {
        report.begin_step(step);
        opt.zero_grad();
        Tensor hidden;
        const nn::HookHandle peek = model.fc1->register_forward_hook(
            [&](const nn::Module&, const std::vector<Tensor>&, const std::vector<Tensor>& out) { hidden = out[0]; });
        Tensor loss = cross_entropy(model.forward(kReportInput), kReportTarget);
        report.backward(loss);
        report.gradients();
        if (step == 2) {  // by hand: |grad| of fc1 (weight and bias), SGD's update lr * grad over |weight|
            const double g2 = report_squared(std::as_const(model.fc1->weight).grad_array()) +
                              report_squared(std::as_const(model.fc1->bias).grad_array());
            const double w2 = report_squared(std::as_const(model.fc1->weight).data()) + report_squared(std::as_const(model.fc1->bias).data());
            fc1_grad = std::sqrt(g2), fc1_ratio = 0.1 * std::sqrt(g2 / w2);
            double sum = 0;
            for (float v : std::as_const(hidden).data()) sum += v;
            fc1_mean = sum / static_cast<double>(hidden.numel());
        }
        opt.step();
        losses.push_back(loss.item());
        report.end_step({{"loss", loss.item()}, {"lr", 0.1}});
    }
    report.log(3, "val_loss", 0.25);
    const json data = json::parse(report.data_json());
    CHECK(data["title"] == "mlp");
    CHECK(data["live"] == true);
    CHECK(data["scalars"]["loss"]["step"] == json({1, 2, 3}));
    for (std::size_t i = 0; i < 3; ++i) CHECK(data["scalars"]["loss"]["value"][i].get<double>() == doctest::Approx(losses[i]));
    CHECK(data["scalars"]["val_loss"]["step"] == json({3}));
    const json& st = data["stats"];
    CHECK(st["step"] == json({1, 2, 3}));
    CHECK(st["modules"] == json({"(model)", "fc1", "fc2"}));  // as the model lists them
    CHECK(st["grad_norm"]["fc1"][1].get<double>() == doctest::Approx(fc1_grad).epsilon(1e-5));
    CHECK(st["update_ratio"]["fc1"][1].get<double>() == doctest::Approx(fc1_ratio).epsilon(1e-4));
    CHECK(st["act_mean"]["fc1"][1].get<double>() == doctest::Approx(fc1_mean).epsilon(1e-5));
    CHECK(st["act_zeros"]["(model)"].size() == 3);
    CHECK(st["grad_norm"].contains("fc2"));
}

TEST_CASE("RunReport: docs/report.md's loop writes the page") {
    TempDir dir;
    std::filesystem::create_directory(dir.file("out"));
    struct InFolder {  // the snippet's relative path lands in dir; the old folder comes back even on a throw
        std::filesystem::path was = std::filesystem::current_path();
        explicit InFolder(const std::string& to) { std::filesystem::current_path(to); }
        ~InFolder() { std::filesystem::current_path(was); }
    };
    std::optional<InFolder> in_dir(std::in_place, dir.file(""));
    ReportMlp model;
    optim::Adam opt(model.parameters(), optim::AdamOptions(1e-2));
    const Tensor& x = kReportInput;
    const Ids& y = kReportTarget;
    const long steps = 4;
    const double validation_loss = 0.5;
    const std::vector<Tensor> weights{softmax(Tensor::from_vector({0.f, 1.f, 2.f, 3.f}, {1, 1, 2, 2}), -1)};
    const std::vector<std::string> words{"a", "b"};
    {
        RunReport report("out/report.html", {.title = "my run"});
        report.attach(model);                         // forward hooks and parameter groups, per module
        for (long step = 1; step <= steps; ++step) {
            report.begin_step(step);                  // the hooks record this step's activations
            opt.zero_grad();
            Tensor loss = cross_entropy(model.forward(x), y);
            report.backward(loss);                    // loss.backward(); the first call keeps the graph for the page
            report.gradients();                       // per-module gradient norms and the weights before the update
            opt.step();
            report.end_step({{"loss", loss.item()}, {"lr", opt.lr()}});  // update ratios; rewrites the page if due
        }
        report.log(steps, "val_loss", validation_loss);
        report.attention("self-attention", weights, words, words);  // per layer: (B, heads, queries, keys)
        report.finish();                              // the last page, which no longer reloads
    }
    in_dir.reset();
    const json data = json::parse(report::read_data(dir.file("out/report.html")));
    CHECK(data["live"] == false);
    CHECK(data["scalars"]["loss"]["step"] == json({1, 2, 3, 4}));
    CHECK(data["scalars"]["val_loss"]["value"] == json({0.5}));
    CHECK(data["attention"].size() == 1);
    CHECK(data["graph"].is_object());
}

TEST_CASE("RunReport samples module statistics every stats_every steps") {
    ReportMlp model;
    optim::SGD opt(model.parameters(), optim::SGDOptions(0.1));
    TempDir dir;
    RunReport report(dir.file("r.html"), {.stats_every = 2});
    report.attach(model);
    for (long step = 1; step <= 5; ++step) {
        report.begin_step(step);
        opt.zero_grad();
        Tensor loss = cross_entropy(model.forward(kReportInput), kReportTarget);
        report.backward(loss);
        report.gradients();
        opt.step();
        report.end_step({{"loss", loss.item()}});
    }
    const json data = json::parse(report.data_json());
    CHECK(data["stats"]["step"] == json({1, 2, 4}));  // the first step, then every 2nd
    CHECK(data["stats"]["grad_norm"]["fc1"].size() == 3);
    CHECK(data["scalars"]["loss"]["step"].size() == 5);
}

TEST_CASE("RunReport's page is rewritten atomically, live until finish()") {
    TempDir dir;
    const std::string path = dir.file("report.html");
    {
        RunReport report(path, {.write_interval = 3600});
        report.begin_step(1);
        report.end_step({{"loss", 2.0}});  // the first end_step writes
        const std::string live = read_bytes(path);
        CHECK(occurrences(live, "id=\"xtgrad-live-reload\"") == 1);
        CHECK(json::parse(report::read_data(path))["live"] == true);
        report.begin_step(2);
        report.end_step({{"loss", 1.0}});  // within write_interval: not rewritten
        CHECK(read_bytes(path) == live);
        report.finish();
    }
    const std::string done = read_bytes(path);
    CHECK(occurrences(done, "id=\"xtgrad-live-reload\"") == 0);
    const json data = json::parse(report::read_data(path));
    CHECK(data["live"] == false);
    CHECK(data["scalars"]["loss"]["value"] == json({2.0, 1.0}));
    CHECK(dir.entries() == std::set<std::string>{"report.html"});  // no temporary left

    // A report that is never finished still ends with a page that does not reload.
    const std::string other = dir.file("other.html");
    {
        RunReport report(other);
        report.begin_step(1);
        report.end_step({{"loss", 1.0}});
    }
    CHECK(json::parse(report::read_data(other))["live"] == false);
}

TEST_CASE("RunReport: a page that cannot be written never stops the steps; finish() says so") {
    TempDir dir;
    const std::string path = dir.file("gone/report.html");  // a folder that does not exist
    RunReport report(path, {.write_interval = 0});
    report.begin_step(1);
    CHECK_NOTHROW(report.end_step({{"loss", 1.0}}));
    report.begin_step(2);
    CHECK_NOTHROW(report.end_step({{"loss", 0.5}}));
    CHECK_THROWS_WITH_AS(report.finish(), doctest::Contains(path.c_str()), Error);
}

TEST_CASE("RunReport labels cannot end the page's script or add markup") {
    TempDir dir;
    const std::string path = dir.file("report.html");
    const std::string evil = "</script><script>alert(1)</script><!--";
    RunReport report(path, {.title = evil});
    // (B, heads, queries, keys) = (1, 1, 2, 2), rows summing to 1, the second key masked for the first query
    const Tensor w = Tensor::from_vector({1.f, 0.f, 0.4f, 0.6f}, {1, 1, 2, 2});
    Mask masked = Mask::from_shape({2, 2});
    masked.fill(false);
    masked(0, 1) = true;
    report.attention(evil, {w}, {evil, "b"}, {"x", "\"y\" & 'z'"}, 0, &masked);
    report.log(1, evil, 1.0);
    report.finish();
    const std::string page = read_bytes(path);
    const std::string template_page = report::page_html("{}", false);
    CHECK(occurrences(page, "</script>") == occurrences(template_page, "</script>"));
    CHECK(occurrences(page, "<script") == occurrences(template_page, "<script"));
    CHECK(occurrences(page, "<!--") == occurrences(template_page, "<!--"));
    const json data = json::parse(report::read_data(path));
    CHECK(data["title"] == evil);
    const json& map = data["attention"][0];
    CHECK(map["queries"][0] == evil);
    CHECK(map["keys"][1] == "\"y\" & 'z'");
    CHECK(map["masked"] == json({{0, 1}, {0, 0}}));
    CHECK(map["weights"][1][1].get<double>() == doctest::Approx(0.6));
}

TEST_CASE("RunReport keeps every layer and head of an attention map, and replaces a kind") {
    TempDir dir;
    RunReport report(dir.file("r.html"));
    // (B*heads, q, k) = (4, 1, 2) with heads = 2: the first batch element's 2 heads
    const Tensor w = Tensor::from_vector({0.1f, 0.9f, 0.2f, 0.8f, 0.3f, 0.7f, 0.4f, 0.6f}, {4, 1, 2});
    report.attention("self", {w, w, w}, {"q"}, {"a", "b"}, 2);
    json data = json::parse(report.data_json());
    REQUIRE(data["attention"].size() == 6);
    CHECK(data["attention"][5]["layer"] == 2);
    CHECK(data["attention"][5]["head"] == 1);
    CHECK(data["attention"][5]["weights"][0][1].get<double>() == doctest::Approx(0.8));
    report.attention("self", {w}, {"q"}, {"a", "b"}, 2);
    data = json::parse(report.data_json());
    CHECK(data["attention"].size() == 2);
    CHECK_THROWS_WITH_AS(report.attention("self", {w}, {"q", "r"}, {"a", "b"}, 2),
                         "RunReport::attention: 'self' layer 0: 2 query and 2 key labels for weights (4,1,2) of 1 queries and 2 keys",
                         Error);
    Mask batch_mask = Mask::from_shape({2, 1, 2});  // (B, queries, keys): batch element 0 is shown
    batch_mask.fill(false);
    batch_mask(0, 0, 1) = true;
    report.attention("masked", {w}, {"q"}, {"a", "b"}, 2, &batch_mask);
    CHECK(json::parse(report.data_json())["attention"][3]["masked"] == json({{0, 1}}));
    Mask flat = Mask::from_shape({2});
    CHECK_THROWS_WITH_AS(report.attention("masked", {w}, {"q"}, {"a", "b"}, 2, &flat),
                         "RunReport::attention: 'masked': mask (2) is neither (queries, keys) = (1,2) nor (B, queries, keys)", Error);
    CHECK_THROWS_WITH_AS(report.attention("self", {w}, {"q"}, {"a", "b"}),
                         "RunReport::attention: 'self' layer 0: weights (4,1,2) need heads between 1 and 4 (got 0)", Error);
}

TEST_CASE("RunReport: a graph_module no op is in is refused at the first backward, before it runs") {
    TempDir dir;
    ReportMlp model;
    RunReport::Options options;
    options.graph_module = "fc9";
    RunReport report(dir.file("report.html"), options);
    report.begin_step(1);
    Tensor loss = cross_entropy(model.forward(kReportInput), kReportTarget);
    CHECK_THROWS_WITH_AS(report.backward(loss),
                         doctest::Contains("RunReport::backward (Options::graph_module): no op of the graph is in module "
                                           "'fc9'; the graph's modules are: fc1, fc2"),
                         Error);
    CHECK_FALSE(model.fc1->weight.has_grad());  // backward did not run
    CHECK(json::parse(report.data_json())["graph"].is_null());
    report.finish();
}

TEST_CASE("RunReport draws the first step's backward graph with each node's op, module and gradient") {
    TempDir dir;
    ReportMlp model;
    RunReport report(dir.file("report.html"));
    report.begin_step(1);
    Tensor loss = cross_entropy(model.forward(kReportInput), kReportTarget);
    report.backward(loss);
    CHECK(model.fc1->weight.has_grad());
    const json graph = json::parse(report.data_json())["graph"];
    REQUIRE(graph.is_object());
    CHECK(graph["step"] == 1);
    bool fc1_op = false, weight_leaf = false;
    for (const auto& [id, node] : graph["nodes"].items()) {
        if (node["kind"] == "op" && node["module"] == "fc1") {
            fc1_op = true;
            CHECK(node["grad_norm"].get<double>() > 0);
            CHECK(!node["inputs"].empty());
        }
        if (node["kind"] == "parameter" && node["module"] == "fc1.weight") weight_leaf = true;
        CHECK(graph["dot"].get<std::string>().find(id.c_str()) != std::string::npos);
    }
    CHECK(fc1_op);
    CHECK(weight_leaf);
    if (graph["svg"] != "") CHECK(graph["svg"].get<std::string>().starts_with("<svg"));
    else CHECK(graph["note"].get<std::string>().find("dot") != std::string::npos);
    report.finish();
}

TEST_CASE("RunReport made with an empty path is off, but backward still runs") {
    ReportMlp model;
    RunReport report("");
    CHECK(!report.enabled());
    report.attach(model);
    report.begin_step(1);
    Tensor loss = cross_entropy(model.forward(kReportInput), kReportTarget);
    report.backward(loss);
    CHECK(model.fc1->weight.has_grad());
    CHECK(!model.fc1->has_forward_hooks());
    report.end_step({{"loss", 1.0}});
    report.finish();
}

TEST_CASE("RunReport refuses bad options and steps out of order") {
    CHECK_THROWS_WITH_AS(RunReport("r.html", {.stats_every = 0}), "RunReport: stats_every must be >= 1, got 0", Error);
    RunReport report("");
    CHECK_NOTHROW(report.begin_step(1));  // off: nothing is checked
    TempDir dir;
    RunReport on(dir.file("r.html"));
    on.begin_step(2);
    CHECK_THROWS_WITH_AS(on.begin_step(2), "RunReport::begin_step: steps must increase, got 2 after 2", Error);
    on.finish();
}

TEST_CASE("report::write_comparison overlays runs; read_data refuses a page that is not a report") {
    TempDir dir;
    for (const char* name : {"a.html", "b.html"}) {
        RunReport r(dir.file(name), {.title = name});
        r.log(1, "loss", name[0] == 'a' ? 2.0 : 3.0);
        r.finish();
    }
    report::write_comparison(dir.file("compare.html"), {{"A", report::read_data(dir.file("a.html"))},
                                                        {"B", report::read_data(dir.file("b.html"))}});
    const json data = json::parse(report::read_data(dir.file("compare.html")));
    REQUIRE(data["runs"].size() == 2);
    CHECK(data["runs"][0]["name"] == "A");
    CHECK(data["runs"][1]["scalars"]["loss"]["value"] == json({3.0}));
    xtgrad::test::write_bytes(dir.file("not.html"), "<html></html>");
    CHECK_THROWS_WITH_AS(report::read_data(dir.file("not.html")),
                         doctest::Contains("is not an xtgrad report page"), Error);
    // a page is a regular file: a fifo blocked for ever, /dev/zero grew until std::bad_alloc
    CHECK_THROWS_WITH_AS(report::read_data("/dev/zero"), doctest::Contains("report::read_data: cannot read '/dev/zero'"), Error);
    REQUIRE(::mkfifo(dir.file("fifo.html").c_str(), 0600) == 0);
    CHECK_THROWS_WITH_AS(report::read_data(dir.file("fifo.html")), doctest::Contains("not a regular file"), Error);
    CHECK_THROWS_WITH_AS(report::read_data(dir.file("missing.html")), doctest::Contains("cannot open"), Error);
    CHECK_THROWS_WITH_AS(report::write_comparison(dir.file("c.html"), {{"X", "{\"a\": 1}"}}),
                         "report::write_comparison: the data of 'X' is not a report's (no scalars)", Error);
}
