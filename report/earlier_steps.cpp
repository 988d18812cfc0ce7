#include <xtgrad/report/earlier_steps.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/report/report_data.hpp>
#include <xtgrad/report/run_report.hpp>
#include <xtgrad/autograd/utf8_text.hpp>

#include <fmt/format.h>

#include <limits>

namespace xtgrad::report {

namespace {

using Json = nlohmann::json;

// A value as the page writes it: a number, "nan", "inf", "-inf", or null (not measured).
std::optional<double> page_value(const Json& v, const std::string& who, const std::string& field) {
    if (v.is_null()) return std::nullopt;
    if (v.is_number()) return v.get<double>();
    if (v.is_string()) {
        const auto& s = v.get_ref<const std::string&>();
        if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
        if (s == "inf") return std::numeric_limits<double>::infinity();
        if (s == "-inf") return -std::numeric_limits<double>::infinity();
    }
    fail("{}: {} holds {}, not a number, \"nan\", \"inf\", \"-inf\" or null", who, field, valid_utf8(v.dump().substr(0, 40)));
}

// Steps as the page lists them: whole numbers from 0 to kMaxStep (the page's script holds them as
// doubles: past 2^53 its axis never ended), increasing; returns how many are <= through.
std::size_t page_steps(const Json& steps, long through, std::vector<long>& out, const std::string& who,
                       const std::string& field) {
    if (!steps.is_array()) fail("{}: {} is not a list of steps", who, field);
    out.clear();
    for (const Json& s : steps) {
        if (!s.is_number_integer() || s.get<long long>() < 0 || s.get<long long>() > RunReport::kMaxStep)
            fail("{}: {} holds {}, not a step (a whole number from 0 to 2^53)", who, field, valid_utf8(s.dump().substr(0, 40)));
        const long step = static_cast<long>(s.get<long long>());
        if (!out.empty() && step <= out.back()) fail("{}: {} does not increase ({} after {})", who, field, step, out.back());
        if (step > through) break;
        out.push_back(step);
    }
    return out.size();
}

const Json& page_list(const Json& parent, const std::string& key, std::size_t at_least, const std::string& who,
                    const std::string& field) {
    const auto it = parent.find(key);
    if (it == parent.end() || !it->is_array() || it->size() < at_least)
        fail("{}: {} is not a list of at least {} values", who, field, at_least);
    return *it;
}

}  // namespace

EarlierSteps earlier_steps(const std::string& data, long through_step, const std::string& who, bool null_scalars) {
    const Json page = parse_report_data(data, who);
    EarlierSteps out;
    for (const auto& [raw_name, series] : page.at("scalars").items()) {
        const std::string name = valid_utf8(raw_name), field = "scalars." + name;
        if (!series.is_object() || !series.contains("step")) fail("{}: {} has no steps", who, field);
        EarlierSteps::Scalar s{name, {}, {}};
        const std::size_t n = page_steps(series["step"], through_step, s.steps, who, field + ".step");
        const Json& values = page_list(series, "value", n, who, field + ".value");
        for (std::size_t i = 0; i < n; ++i) {
            const std::optional<double> v = page_value(values[i], who, field + ".value");
            if (!v && !null_scalars) fail("{}: {}.value[{}] is null: a logged scalar always has a value", who, field, i);
            s.values.push_back(v.value_or(std::numeric_limits<double>::quiet_NaN()));
        }
        if (n > 0) out.scalars.push_back(std::move(s));
    }
    const auto stats = page.find("stats");
    if (stats == page.end() || stats->is_null()) return out;
    if (!stats->is_object() || !stats->contains("step")) fail("{}: stats has no steps", who);
    const std::size_t n = page_steps((*stats)["step"], through_step, out.stat_steps, who, "stats.step");
    for (const char* key : {"grad_norm", "update_ratio", "act_mean", "act_std", "act_zeros"}) {
        const auto modules = stats->find(key);
        if (modules == stats->end()) continue;
        if (!modules->is_object()) fail("{}: stats.{} is not an object of modules", who, key);
        auto& per_module = out.stats.emplace_back(key, std::vector<std::pair<std::string, EarlierSteps::Values>>{}).second;
        for (const auto& [raw_module, values] : modules->items()) {
            const std::string module = valid_utf8(raw_module), field = fmt::format("stats.{}.{}", key, module);
            const Json& list = page_list(*modules, raw_module, n, who, field);
            EarlierSteps::Values kept;
            for (std::size_t i = 0; i < n; ++i) kept.push_back(page_value(list[i], who, field));
            per_module.emplace_back(module, std::move(kept));
        }
    }
    return out;
}

}  // namespace xtgrad::report
