#include <xtgrad/report/run_report.hpp>

#include <xtgrad/io/atomic_file.hpp>
#include <xtgrad/autograd/engine.hpp>
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/graphviz.hpp>
#include <xtgrad/autograd/trace_table.hpp>
#include <xtgrad/nn/module.hpp>
#include <xtgrad/report/attention_maps.hpp>
#include <xtgrad/report/collapsed_graph.hpp>
#include <xtgrad/report/data_json.hpp>
#include <xtgrad/report/earlier_steps.hpp>
#include <xtgrad/report/graph_svg.hpp>
#include <xtgrad/report/page.hpp>
#include <xtgrad/autograd/utf8_text.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <exception>
#include <optional>
#include <ostream>
#include <set>
#include <utility>

namespace xtgrad {

using Json = nlohmann::json;

namespace {

using report::Series;
using report::Value;

// A parameter "encoder.layers.0.fc.weight" belongs to module "encoder.layers.0.fc".
std::string module_of(const std::string& param) {
    const std::size_t dot = param.rfind('.');
    return dot == std::string::npos ? "(model)" : param.substr(0, dot);
}

double squared_norm(const Array& a) {
    double s = 0;
    for (float v : a) s += static_cast<double>(v) * v;
    return s;
}

struct ActivationStats {
    Value mean, std, zeros;
};

ActivationStats stats_of(const Array& a) {
    if (a.size() == 0) return {};
    double sum = 0, sq = 0, zeros = 0;
    for (float v : a) sum += v, sq += static_cast<double>(v) * v, zeros += v == 0.f;
    const double n = static_cast<double>(a.size()), mean = sum / n, var = sq / n - mean * mean;
    // max(0, NaN) is 0: a NaN activation must give a NaN std, not 0
    return {mean, std::sqrt(std::isnan(var) ? var : std::max(0.0, var)), zeros / n};
}

}  // namespace

struct RunReport::Impl {
    Options options;
    bool finished = false;
    std::string error;  // why the run ended in an error ("": it did not)
    int uncaught_at_start = std::uncaught_exceptions();  // more at destruction: destroyed by unwinding
    std::chrono::steady_clock::time_point last_write{};
    bool written = false;

    std::map<std::string, std::pair<std::vector<long>, std::vector<double>>> scalars;
    std::vector<std::string> scalar_names;

    // Per-module statistics at the sampled steps.
    std::vector<std::pair<std::string, std::vector<Tensor>>> groups;  // module path -> its parameters
    std::vector<nn::HookHandle> hooks;
    std::vector<long> stat_steps;
    Series grad_norm, update_ratio, act_mean, act_std, act_zeros;
    std::vector<std::vector<Array>> before;  // the weights before the update, per group (empty: no gradient)
    std::vector<std::string> module_order;    // every module, as the model lists them

    std::optional<long> step;  // the last step begun
    bool attached = false, in_step = false, sampled = false;
    Json attention = Json::array();
    Json graph = nullptr;
    std::vector<std::pair<std::string, std::string>> results;  // RunReport::result, in order
    std::optional<long> resumed_after;  // the last step kept from the earlier run's page
    std::set<std::string> notes;  // what the page says about its data (labels that were not UTF-8)

    // A label as the page holds it: valid UTF-8, invalid bytes replaced by U+FFFD, which the page
    // and (once) stderr say. `what` names it, with {} where the label (replaced) goes.
    std::string text(const std::string& label, const std::string& what) {
        bool replaced = false;
        std::string valid = valid_utf8(label, &replaced);
        if (replaced) note_replaced(fmt::format(fmt::runtime(what), valid));
        return valid;
    }
    void note_replaced(const std::string& what) {
        constexpr std::size_t kMaxNotes = 20;  // the page names the first ones
        if (notes.empty())
            fmt::print(stderr, "RunReport: {} is not valid UTF-8: its invalid bytes are shown as U+FFFD on the page\n", what);
        if (notes.size() < kMaxNotes) notes.insert(fmt::format("not valid UTF-8, shown with U+FFFD: {}", what));
    }

    // After finish() the page is written for the last time: what a call adds would be lost unsaid.
    void check_open(const char* who) const {
        if (finished) fail("{}: the report is finished (finish() wrote its last page; call it after this)", who);
    }

    // What continue_from reads back (report/earlier_steps.cpp) is what may be logged: a step in
    // 0..kMaxStep, each scalar's steps increasing. Else an Error naming `who`, nothing logged.
    void check_log(long at, const std::string& raw_name, const char* who) const {
        check_open(who);
        if (at < 0 || at > kMaxStep)
            fail("{}: scalar '{}' at step {}: a step is a whole number from 0 to {} (2^53)", who, escaped_for_message(raw_name),
                 at, kMaxStep);
        const auto it = scalars.find(valid_utf8(raw_name));
        if (it != scalars.end() && !it->second.first.empty() && at <= it->second.first.back())
            fail("{}: scalar '{}' at step {} after step {}: a scalar's steps must increase", who,
                 escaped_for_message(raw_name), at, it->second.first.back());
    }

    void log(long at, const std::string& raw_name, double value) {
        const std::string name = text(raw_name, "scalar name '{}'");
        auto [it, fresh] = scalars.try_emplace(name);
        if (fresh) scalar_names.push_back(name);
        it->second.first.push_back(at);
        it->second.second.push_back(value);
    }
};

RunReport::RunReport(std::string path, Options options) : path_(std::move(path)), impl_(std::make_unique<Impl>()) {
    if (options.stats_every < 1) fail("RunReport: stats_every must be >= 1, got {}", options.stats_every);
    if (!(options.write_interval >= 0)) fail("RunReport: write_interval must be >= 0 seconds, got {}", options.write_interval);
    if (options.graph_depth < -1) fail("RunReport: graph_depth must be -1 (no limit) or >= 0, got {}", options.graph_depth);
    impl_->options = std::move(options);
    if (enabled()) impl_->options.title = impl_->text(impl_->options.title, "the title");
}

RunReport::~RunReport() {
    if (!enabled() || impl_->finished) return;
    try {
        if (std::uncaught_exceptions() > impl_->uncaught_at_start)
            finish_with_error("an exception ended the run (the report was destroyed while the stack unwound)");
        else
            finish();
    } catch (...) {  // a destructor must not throw; the last live page stays
    }
}

void RunReport::attach(nn::Module& model) {
    if (!enabled()) return;
    impl_->check_open("RunReport::attach");
    if (impl_->attached) fail("RunReport::attach: a model is attached already (one per report: its modules would be listed twice)");
    impl_->attached = true;
    for (const auto& [name, t] : model.named_parameters()) {
        const std::string m = impl_->text(module_of(name), "module name '{}'");
        if (impl_->groups.empty() || impl_->groups.back().first != m) impl_->groups.push_back({m, {}});
        impl_->groups.back().second.push_back(t);
    }
    // Every module, depth first, in registration order: the page lists them as the model reads.
    std::vector<nn::Module*> todo{&model};
    while (!todo.empty()) {
        nn::Module* m = todo.back();
        todo.pop_back();
        const std::string name = m->path().empty() ? "(model)" : impl_->text(m->path(), "module name '{}'");
        impl_->module_order.push_back(name);
        Impl* impl = impl_.get();
        impl->hooks.push_back(m->register_forward_hook(
            [impl, name](const nn::Module&, const std::vector<Tensor>&, const std::vector<Tensor>& outputs) {
                if (!impl->sampled || outputs.empty() || !outputs[0].defined()) return;
                const ActivationStats s = stats_of(std::as_const(outputs[0]).data());
                const std::size_t at = impl->stat_steps.size() - 1;
                impl->act_mean.add(name, at, s.mean);
                impl->act_std.add(name, at, s.std);
                impl->act_zeros.add(name, at, s.zeros);
            }));
        const auto kids = m->named_children();
        for (auto it = kids.rbegin(); it != kids.rend(); ++it) todo.push_back(it->second);
    }
}

void RunReport::continue_from(const std::string& data, long through_step) {
    if (!enabled()) return;
    impl_->check_open("RunReport::continue_from");
    // logged steps first would make the kept ones not increase: a page the next resume refuses
    if (impl_->step || !impl_->scalars.empty())
        fail("RunReport::continue_from: the report has steps already (call it before the first begin_step or log, once)");
    if (through_step < 0) fail("RunReport::continue_from: through_step {} must be >= 0 (the steps done)", through_step);
    const report::EarlierSteps earlier = report::earlier_steps(data, through_step, "RunReport::continue_from: the earlier page");
    long last = -1;
    for (const auto& s : earlier.scalars)
        for (std::size_t i = 0; i < s.steps.size(); ++i) impl_->log(s.steps[i], s.name, s.values[i]);
    for (const auto& s : earlier.scalars) last = std::max(last, s.steps.back());
    impl_->stat_steps = earlier.stat_steps;
    Series* series[] = {&impl_->grad_norm, &impl_->update_ratio, &impl_->act_mean, &impl_->act_std, &impl_->act_zeros};
    const char* names[] = {"grad_norm", "update_ratio", "act_mean", "act_std", "act_zeros"};
    for (const auto& [stat, modules] : earlier.stats)
        for (std::size_t k = 0; k < 5; ++k)
            if (stat == names[k])
                for (const auto& [module, values] : modules)
                    for (std::size_t i = 0; i < values.size(); ++i) series[k]->add(module, i, values[i]);
    if (!earlier.stat_steps.empty()) last = std::max(last, earlier.stat_steps.back());
    if (last >= 0) impl_->step = impl_->resumed_after = last;  // the resumed steps come after these
}

void RunReport::begin_step(long step) {
    if (!enabled()) return;
    impl_->check_open("RunReport::begin_step");
    if (step < 0) fail("RunReport::begin_step: step {} is negative (steps count from 0 or 1, and increase)", step);
    if (step > kMaxStep) fail("RunReport::begin_step: step {} is above {} (2^53, the page's exact steps)", step, kMaxStep);
    if (impl_->step && step <= *impl_->step)
        fail("RunReport::begin_step: steps must increase, got {} after {}", step, *impl_->step);
    impl_->step = step;
    impl_->in_step = true;
    impl_->before.clear();  // an open step begun again: its weights are not this step's
    impl_->sampled = step % impl_->options.stats_every == 0 || impl_->stat_steps.empty();
    if (impl_->sampled) impl_->stat_steps.push_back(step);
}

void RunReport::backward(const Tensor& loss) {
    if (!enabled() || !impl_->graph.is_null() || impl_->finished) return loss.backward();
    // a graph_module that names no module is refused before backward runs: nothing changed
    check_module_prefix(loss, impl_->options.graph_module, "RunReport::backward (Options::graph_module)");
    Json graph{{"step", impl_->step.value_or(0)}};
    std::vector<DotNode> nodes;
    {
        TraceTable trace;  // the gradient norm that reached each node
        loss.backward(/*retain_graph=*/true);
        DotOptions o;
        o.module_prefix = impl_->options.graph_module;
        o.max_depth = impl_->options.graph_depth;
        o.grads = true;
        o.trace = &trace;
        o.nodes = &nodes;
        graph["dot"] = to_dot(loss, o);
    }
    Json by_id = Json::object();
    for (const DotNode& n : nodes)
        by_id[n.id] = {{"kind", n.kind}, {"op", n.op},         {"module", n.module_path}, {"shape", n.shape},
                       {"inputs", n.input_shapes}, {"saved", n.saved},
                       {"grad_norm", report::value_json(n.grad_norm < 0 ? Value{} : Value{n.grad_norm})}};
    graph["nodes"] = std::move(by_id);
    graph["module"] = impl_->options.graph_module;
    const report::Svg svg = report::render_svg(graph["dot"].get<std::string>(), nodes.size());
    graph["svg"] = svg.svg;
    graph["note"] = svg.note;
    // The same graph by module, which the page opens with: readable at its size (report/collapsed_graph.hpp).
    const report::CollapsedGraph collapsed = report::collapse_by_module(graph["dot"].get<std::string>(), nodes,
                                                                        impl_->options.graph_module);
    Json boxes = Json::array();
    for (const report::ModuleBox& b : collapsed.boxes)
        boxes.push_back({{"id", b.id}, {"module", b.module}, {"ops", b.ops}, {"parameters", b.parameters}, {"nodes", b.nodes}});
    graph["collapsed"] = {{"boxes", std::move(boxes)}, {"svg", report::render_svg(collapsed.dot, collapsed.boxes.size()).svg}};
    if (report::make_valid_utf8(graph)) impl_->note_replaced("a label of the graph (a module path)");
    impl_->graph = std::move(graph);
}

void RunReport::gradients() {
    if (!enabled() || !impl_->sampled) return;
    const std::size_t at = impl_->stat_steps.size() - 1;
    impl_->before.clear();
    for (const auto& [module, params] : impl_->groups) {
        double sq = 0;
        bool any = false;
        std::vector<Array> copies;
        for (const Tensor& p : params) {
            if (p.has_grad()) sq += squared_norm(std::as_const(p).grad_array()), any = true;
            copies.push_back(std::as_const(p).data());
        }
        impl_->grad_norm.add(module, at, any ? Value{std::sqrt(sq)} : Value{});
        if (!any) copies.clear();  // frozen or unused: no update to measure
        impl_->before.push_back(std::move(copies));
    }
}

void RunReport::end_step(const std::vector<std::pair<std::string, double>>& scalars) {
    if (!enabled()) return;
    impl_->check_open("RunReport::end_step");
    if (!impl_->in_step) fail("RunReport::end_step: no step is open (call begin_step first)");
    std::set<std::string> given;  // every scalar checked before any is logged: a refused call logs nothing
    for (const auto& [name, value] : scalars) {
        impl_->check_log(*impl_->step, name, "RunReport::end_step");
        if (!given.insert(valid_utf8(name)).second)
            fail("RunReport::end_step: scalar '{}' is given twice for step {}", escaped_for_message(name), *impl_->step);
    }
    for (const auto& [name, value] : scalars) impl_->log(*impl_->step, name, value);
    if (impl_->sampled && impl_->before.size() == impl_->groups.size()) {
        const std::size_t at = impl_->stat_steps.size() - 1;
        for (std::size_t g = 0; g < impl_->groups.size(); ++g) {
            double moved = 0, weight = 0;
            const std::vector<Tensor>& params = impl_->groups[g].second;
            if (impl_->before[g].empty()) continue;
            for (std::size_t i = 0; i < params.size(); ++i) {
                const Array& now = std::as_const(params[i]).data();
                const Array& was = impl_->before[g][i];
                for (std::size_t k = 0; k < now.size(); ++k) {
                    const double d = static_cast<double>(now.data()[k]) - was.data()[k];
                    moved += d * d, weight += static_cast<double>(was.data()[k]) * was.data()[k];
                }
            }
            // |weight| = 0 has no ratio; a NaN weight gives a NaN one, never "not measured"
            const bool measured = weight > 0 || std::isnan(weight);
            impl_->update_ratio.add(impl_->groups[g].first, at, measured ? Value{std::sqrt(moved / weight)} : Value{});
        }
    }
    impl_->before.clear();
    impl_->in_step = impl_->sampled = false;
    const auto now = std::chrono::steady_clock::now();
    if (!impl_->written || std::chrono::duration<double>(now - impl_->last_write).count() >= impl_->options.write_interval) {
        try {
            write();
        } catch (const Error&) {  // a page that cannot be written never stops the training; finish() reports it
            impl_->last_write = now;
        }
    }
}

void RunReport::log(long step, const std::string& name, double value) {
    if (!enabled()) return;
    impl_->check_log(step, name, "RunReport::log");
    impl_->log(step, name, value);
}

// Every map is built and checked first, the kind's maps replaced only then: a refused call changes nothing.
void RunReport::attention(const std::string& kind, const std::vector<Tensor>& layers, const std::vector<std::string>& queries,
                          const std::vector<std::string>& keys, std::size_t heads, const Mask* masked) {
    if (!enabled()) return;
    impl_->check_open("RunReport::attention");
    const std::string replaced_kind = valid_utf8(kind);  // as attention_maps keeps it
    std::size_t cells_kept = 0;  // the other kinds' maps, which stay
    std::set<std::string> other_kinds;
    for (const Json& m : impl_->attention)
        if (m["kind"] != replaced_kind) {
            cells_kept += m["queries"].size() * m["keys"].size();
            other_kinds.insert(m["kind"].get<std::string>());
        }
    if (other_kinds.size() >= kMaxAttentionKinds)
        fail("RunReport::attention: '{}' would be a kind past the {} a report holds (RunReport::kMaxAttentionKinds); "
             "a kind's maps are replaced when it is given again", replaced_kind, kMaxAttentionKinds);
    report::AttentionMaps made =
        report::attention_maps(kind, layers, queries, keys, heads, masked, impl_->step.value_or(0), cells_kept);
    Json kept = Json::array();
    for (Json& m : impl_->attention)  // moved, not copied: a report of many maps stays linear
        if (m["kind"] != made.kind) kept.push_back(std::move(m));
    for (Json& m : made.maps) kept.push_back(std::move(m));
    impl_->attention = std::move(kept);
    if (made.kind_replaced) impl_->note_replaced(fmt::format("attention kind '{}'", made.kind));
    if (made.labels_replaced) impl_->note_replaced(fmt::format("a token label of attention '{}'", made.kind));
}

void RunReport::result(const std::string& name, const std::string& text) {
    if (!enabled()) return;
    impl_->check_open("RunReport::result");
    if (name.empty()) fail("RunReport::result: the name is empty (text '{}')", valid_utf8(text.substr(0, 40), nullptr));
    const std::string n = impl_->text(name, "result name '{}'");
    const std::string t = impl_->text(text, "the text of a result");
    for (auto& [have, value] : impl_->results)
        if (have == n) {
            value = t;
            return;
        }
    impl_->results.emplace_back(n, t);
}

std::string RunReport::data_json() const {
    Json scalars = Json::object();
    for (const std::string& name : impl_->scalar_names) {
        const auto& [steps, values] = impl_->scalars.at(name);
        scalars[name] = {{"step", steps}, {"value", report::values_json(values)}};
    }
    const std::size_t n = impl_->stat_steps.size();
    Json data{
        {"format", "xtgrad-report 1"},
        {"title", impl_->options.title},
        {"live", !impl_->finished},
        {"outcome", !impl_->finished ? "running" : impl_->error.empty() ? "finished" : "error"},
        {"error", impl_->error.empty() ? Json(nullptr) : Json(impl_->error)},
        {"notes", impl_->notes},
        {"scalars", std::move(scalars)},
        {"stats",
         {{"step", impl_->stat_steps},
          {"modules", impl_->module_order},
          {"grad_norm", impl_->grad_norm.to_json(n)},
          {"update_ratio", impl_->update_ratio.to_json(n)},
          {"act_mean", impl_->act_mean.to_json(n)},
          {"act_std", impl_->act_std.to_json(n)},
          {"act_zeros", impl_->act_zeros.to_json(n)}}},
        {"attention", impl_->attention},
        {"graph", impl_->graph},
        {"results", report::results_json(impl_->results)},
        {"resumed_after", impl_->resumed_after ? Json(*impl_->resumed_after) : Json(nullptr)},
    };
    // Every label was made valid UTF-8 where it came in; `replace` is only the last guard that
    // a page write never stops a run.
    return data.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void RunReport::write() {
    if (!enabled()) return;
    const std::string page = report::page_html(data_json(), !impl_->finished);
    write_file_atomically(path_, [&](std::ostream& out) { out << page; });
    impl_->written = true;
    impl_->last_write = std::chrono::steady_clock::now();
}

void RunReport::finish() {
    if (!enabled()) return;
    impl_->finished = true;
    try {
        write();
    } catch (...) {  // not written: the run is not over for the report (the destructor tries again)
        impl_->finished = false;
        throw;
    }
}

void RunReport::finish_with_error(const std::string& reason) {
    if (!enabled()) return;
    const std::string was = impl_->error;
    impl_->error = impl_->text(reason.empty() ? std::string("(no reason given)") : reason, "the error's reason");
    try {
        finish();
    } catch (...) {
        impl_->error = was;
        throw;
    }
}

}  // namespace xtgrad
