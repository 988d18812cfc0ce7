// The page's own script on hostile labels and values, run in headless Chromium (skipped where it
// is not installed; tests/report/browser_test.py drives the page's clicks): modules and scalars
// named as Object's own members ("constructor", "toString"), a scalar whose name holds a comma, a
// quote and a line break, a scalar logged once early, and values of -1e308 and 1e308. The page is
// given two probes: one before its script records every console error, one after it writes what
// the page shows (and its scalars' CSV) into a <pre> that --dump-dom prints.
#include <xtgrad/report/run_report.hpp>

#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/io/run_program.hpp>
#include <xtgrad/nn/layers.hpp>
#include <xtgrad/optim/optimizer.hpp>
#include "tests/io/io_test_util.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

TEST_SUITE_BEGIN("debug");

using namespace xtgrad;
using nlohmann::json;
using xtgrad::test::TempDir;

namespace {

// Children named as members every JS object inherits: obj[name] found Object's own.
class PrototypeNames : public nn::Module {
public:
    PrototypeNames() {
        fc = register_module("hasOwnProperty", std::make_shared<nn::Linear>(2, 2));
        relu = register_module("constructor", std::make_shared<nn::ReLU>());
        relu2 = register_module("toString", std::make_shared<nn::ReLU>());
    }
    Tensor forward(const Tensor& x) const {
        auto scope = enter(x);
        return scope.output(relu2->forward(relu->forward(fc->forward(x))));
    }
    std::shared_ptr<nn::Linear> fc;
    std::shared_ptr<nn::ReLU> relu, relu2;
};

const char* const kErrorProbe =
    R"(<script>window.probeErrors = []; console.error = (...a) => probeErrors.push(a.join(" "));)"
    R"(addEventListener("error", e => probeErrors.push(e.message));</script>)";
const char* const kShownProbe =
    R"(<script>{ const p = document.createElement("pre"); p.id = "probe"; p.textContent = JSON.stringify({)"
    R"(errors: probeErrors, status: document.getElementById("status").textContent,)"
    R"(rows: document.querySelectorAll("tr.module-row").length, no_modules: !!document.querySelector("#module-table p.empty"), series: document.querySelectorAll("#loss-chart polyline.series").length,)"
    R"(nan_points: [...document.querySelectorAll("polyline")].filter(l => /NaN/.test(l.getAttribute("points"))).length,)"
    R"(csv: data.runs ? "" : scalarsCsv(run)}); document.body.appendChild(p); }</script>)";

// What the page at `path` shows, from its probes; null when Chromium is not installed.
json shown(const TempDir& dir, const std::string& path) {
    std::string page = test::read_bytes(path);
    page.replace(page.find("<head>"), 6, std::string("<head>") + kErrorProbe);
    page.replace(page.rfind("</body>"), 7, std::string(kShownProbe) + "</body>");
    const std::string probed = dir.file("probed.html"), dom = dir.file("dom.html");
    test::write_bytes(probed, page);
    const auto status = run_program({"sh", "-c",
                                     "command -v chromium >/dev/null || exit 3; timeout 60 chromium --headless --no-sandbox "
                                     "--disable-gpu --dump-dom \"file://$1\" >\"$2\" 2>/dev/null",
                                     "sh", probed, dom});
    REQUIRE(status.has_value());
    if (*status == 3) return nullptr;
    REQUIRE_MESSAGE(*status == 0, "chromium ended with " << *status << " (124: the page hung)");
    std::string text = test::read_bytes(dom);
    const std::size_t open = text.find("<pre id=\"probe\">"), close = text.find("</pre>", open);
    REQUIRE(close != std::string::npos);
    text = text.substr(open + 16, close - open - 16);
    for (const auto& [entity, c] : {std::pair<std::string, std::string>{"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}})
        for (std::size_t at = text.find(entity); at != std::string::npos; at = text.find(entity, at + 1)) text.replace(at, entity.size(), c);
    return json::parse(text);
}

}  // namespace

TEST_CASE("The report page's script: members' names, odd scalar names, the last step, values near the double's range") {
    TempDir dir;
    PrototypeNames model;
    optim::SGD opt(model.parameters(), optim::SGDOptions(0.1));
    const Tensor x = Tensor::from_vector({0.5f, -1.f, 1.5f, 2.f}, {2, 2});
    {
        RunReport report(dir.file("r.html"));
        report.attach(model);
        for (long step = 1; step <= 6; ++step) {
            report.begin_step(step);
            opt.zero_grad();
            Tensor loss = sum(model.forward(x));
            report.backward(loss);
            report.gradients();
            opt.step();
            report.end_step({{"loss", loss.item()}, {"constructor", 1.0}, {"a,b\"c\nd", 2.0}, {"huge", step % 2 ? 1e308 : -1e308}});
            if (step == 1) report.log(1, "accuracy", 0.5);  // first by name, logged once
        }
        report.finish_with_error("loss is nan at step 7");
    }
    const json page = shown(dir, dir.file("r.html"));
    if (page.is_null()) {
        MESSAGE("chromium is not installed: the page's script is not run");
        return;
    }
    CHECK(page["errors"] == json::array());  // was "showModules: TypeError: ys.map is not a function"
    CHECK(page["rows"] == 4);                // the model and its three children
    CHECK(page["nan_points"] == 0);          // -1e308..1e308 was a span of inf: every point NaN
    // was "at step 1": the last step of "accuracy", the first scalar by name
    CHECK(page["status"].get<std::string>().find("stopped by an error at step 6") != std::string::npos);
    // was step,a,b"c\nd,...: a name's comma or line break made columns of its own
    CHECK(page["csv"].get<std::string>().starts_with("step,\"a,b\"\"c\nd\",\"accuracy\",\"constructor\",\"huge\",\"loss\"\n"));

    // comparing it with a run without "constructor": r.scalars["constructor"] was Object's own
    RunReport plain(dir.file("plain.html"));
    plain.log(1, "loss", 1.0);
    plain.finish();
    report::write_comparison(dir.file("c.html"), {{"hostile", report::read_data(dir.file("r.html"))},
                                                  {"plain", report::read_data(dir.file("plain.html"))}});
    // no model attached: was a table of headers and no row, not "no module statistics recorded"
    CHECK(shown(dir, dir.file("plain.html"))["no_modules"] == true);
    const json compared = shown(dir, dir.file("c.html"));
    CHECK(compared["errors"] == json::array());  // was "showCurves: TypeError: ... reading 'length'"
    CHECK(compared["series"] == 6);              // hostile's 5 curves besides lr, plain's loss
}

TEST_SUITE_END();
