#include <xtgrad/report/run_report.hpp>

#include <xtgrad/io/atomic_file.hpp>
#include <xtgrad/autograd/engine.hpp>
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/graphviz.hpp>
#include <xtgrad/autograd/trace_table.hpp>
#include <xtgrad/nn/module.hpp>
#include <xtgrad/report/graph_svg.hpp>
#include <xtgrad/report/page.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <ostream>
#include <utility>

namespace xtgrad {

using Json = nlohmann::json;

namespace {

constexpr double kMissing = std::numeric_limits<double>::quiet_NaN();  // JSON null: not measured at that step

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
    double mean = kMissing, std = kMissing, zeros = kMissing;
};

ActivationStats stats_of(const Array& a) {
    if (a.size() == 0) return {};
    double sum = 0, sq = 0, zeros = 0;
    for (float v : a) sum += v, sq += static_cast<double>(v) * v, zeros += v == 0.f;
    const double n = static_cast<double>(a.size()), mean = sum / n;
    return {mean, std::sqrt(std::max(0.0, sq / n - mean * mean)), zeros / n};
}

}  // namespace

// The type of RunReport::Impl's curves: not in the anonymous namespace (-Wsubobject-linkage).
namespace run_report_detail {

// One curve per name, aligned with a list of steps (null where a step has no value).
struct Series {
    std::vector<std::string> names;
    std::map<std::string, std::vector<double>> values;
    void add(const std::string& name, std::size_t at, double v) {
        auto [it, fresh] = values.try_emplace(name);
        if (fresh) names.push_back(name);
        it->second.resize(at + 1, kMissing);
        it->second[at] = v;
    }
    Json to_json(std::size_t steps) const {
        Json out = Json::object();
        for (const std::string& n : names) {
            std::vector<double> v = values.at(n);
            v.resize(steps, kMissing);
            out[n] = v;
        }
        return out;
    }
};

}  // namespace run_report_detail

using run_report_detail::Series;

struct RunReport::Impl {
    Options options;
    bool finished = false;
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

    long step = 0;
    bool in_step = false, sampled = false;
    Json attention = Json::array();
    Json graph = nullptr;

    void log(long at, const std::string& name, double value) {
        auto [it, fresh] = scalars.try_emplace(name);
        if (fresh) scalar_names.push_back(name);
        it->second.first.push_back(at);
        it->second.second.push_back(value);
    }
};

RunReport::RunReport(std::string path, Options options) : path_(std::move(path)), impl_(std::make_unique<Impl>()) {
    if (options.stats_every < 1) fail("RunReport: stats_every must be >= 1, got {}", options.stats_every);
    if (!(options.write_interval >= 0)) fail("RunReport: write_interval must be >= 0 seconds, got {}", options.write_interval);
    impl_->options = std::move(options);
}

RunReport::~RunReport() {
    if (!enabled() || impl_->finished) return;
    try {
        finish();
    } catch (...) {  // a destructor must not throw; the last live page stays
    }
}

void RunReport::attach(nn::Module& model) {
    if (!enabled()) return;
    for (const auto& [name, t] : model.named_parameters()) {
        const std::string m = module_of(name);
        if (impl_->groups.empty() || impl_->groups.back().first != m) impl_->groups.push_back({m, {}});
        impl_->groups.back().second.push_back(t);
    }
    // Every module, depth first, in registration order: the page lists them as the model reads.
    std::vector<nn::Module*> todo{&model};
    while (!todo.empty()) {
        nn::Module* m = todo.back();
        todo.pop_back();
        const std::string name = m->path().empty() ? "(model)" : m->path();
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

void RunReport::begin_step(long step) {
    if (!enabled()) return;
    if (step <= impl_->step && impl_->step != 0)
        fail("RunReport::begin_step: steps must increase, got {} after {}", step, impl_->step);
    impl_->step = step;
    impl_->in_step = true;
    impl_->sampled = step % impl_->options.stats_every == 0 || impl_->stat_steps.empty();
    if (impl_->sampled) impl_->stat_steps.push_back(step);
}

void RunReport::backward(const Tensor& loss) {
    if (!enabled() || !impl_->graph.is_null()) return loss.backward();
    Json graph{{"step", impl_->step}};
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
                       {"inputs", n.input_shapes}, {"saved", n.saved}, {"grad_norm", n.grad_norm < 0 ? kMissing : n.grad_norm}};
    graph["nodes"] = std::move(by_id);
    graph["module"] = impl_->options.graph_module;
    const report::Svg svg = report::render_svg(graph["dot"].get<std::string>(), nodes.size());
    graph["svg"] = svg.svg;
    graph["note"] = svg.note;
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
        impl_->grad_norm.add(module, at, any ? std::sqrt(sq) : kMissing);
        if (!any) copies.clear();  // frozen or unused: no update to measure
        impl_->before.push_back(std::move(copies));
    }
}

void RunReport::end_step(const std::vector<std::pair<std::string, double>>& scalars) {
    if (!enabled()) return;
    if (!impl_->in_step) fail("RunReport::end_step: no step is open (call begin_step first)");
    for (const auto& [name, value] : scalars) impl_->log(impl_->step, name, value);
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
            impl_->update_ratio.add(impl_->groups[g].first, at, weight > 0 ? std::sqrt(moved / weight) : kMissing);
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
    if (enabled()) impl_->log(step, name, value);
}

void RunReport::attention(const std::string& kind, const std::vector<Tensor>& layers, const std::vector<std::string>& queries,
                          const std::vector<std::string>& keys, std::size_t heads, const Mask* masked) {
    if (!enabled()) return;
    Json kept = Json::array();
    for (Json& m : impl_->attention)
        if (m["kind"] != kind) kept.push_back(std::move(m));
    for (std::size_t layer = 0; layer < layers.size(); ++layer) {
        const Array& w = std::as_const(layers[layer]).data();
        const Shape shape(w.shape().begin(), w.shape().end());
        if (shape.size() != 3 && shape.size() != 4)
            fail("RunReport::attention: '{}' layer {}: weights {} are neither (B, heads, queries, keys) nor (B*heads, queries, keys)",
                 kind, layer, shape_str(shape));
        const std::size_t q = shape[shape.size() - 2], k = shape.back();
        const std::size_t n_heads = shape.size() == 4 ? shape[1] : heads;
        if (n_heads == 0 || (shape.size() == 3 && shape[0] < n_heads))
            fail("RunReport::attention: '{}' layer {}: weights {} need heads between 1 and {} (got {})", kind, layer,
                 shape_str(shape), shape[0], heads);
        if (queries.size() != q || keys.size() != k)
            fail("RunReport::attention: '{}' layer {}: {} query and {} key labels for weights {} of {} queries and {} keys",
                 kind, layer, queries.size(), keys.size(), shape_str(shape), q, k);
        const std::size_t md = masked == nullptr ? 0 : masked->dimension();
        if (masked != nullptr && ((md != 2 && md != 3) || masked->shape()[md - 2] != q || masked->shape()[md - 1] != k))
            fail("RunReport::attention: '{}': mask {} is neither (queries, keys) = ({},{}) nor (B, queries, keys)", kind,
                 shape_str(masked->shape()), q, k);
        for (std::size_t h = 0; h < n_heads; ++h) {
            std::vector<std::vector<float>> rows(q, std::vector<float>(k));
            for (std::size_t i = 0; i < q; ++i)
                for (std::size_t j = 0; j < k; ++j) rows[i][j] = w.data()[(h * q + i) * k + j];
            Json map{{"kind", kind}, {"layer", layer}, {"head", h}, {"step", impl_->step},
                     {"queries", queries}, {"keys", keys}, {"weights", rows}, {"masked", nullptr}};
            if (masked != nullptr) {
                std::vector<std::vector<int>> hidden(q, std::vector<int>(k));
                for (std::size_t i = 0; i < q; ++i)
                    for (std::size_t j = 0; j < k; ++j) hidden[i][j] = masked->data()[i * k + j] ? 1 : 0;  // batch element 0
                map["masked"] = hidden;
            }
            kept.push_back(std::move(map));
        }
    }
    impl_->attention = std::move(kept);
}

std::string RunReport::data_json() const {
    Json scalars = Json::object();
    for (const std::string& name : impl_->scalar_names) {
        const auto& [steps, values] = impl_->scalars.at(name);
        scalars[name] = {{"step", steps}, {"value", values}};
    }
    const std::size_t n = impl_->stat_steps.size();
    Json data{
        {"format", "xtgrad-report 1"},
        {"title", impl_->options.title},
        {"live", !impl_->finished},
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
    };
    return data.dump();
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
    write();
}

}  // namespace xtgrad
