#include <xtgrad/report/data_json.hpp>

#include <xtgrad/autograd/utf8_text.hpp>

#include <cmath>

namespace xtgrad::report {

namespace {

using Json = nlohmann::json;

}  // namespace

Json value_json(Value v) {
    if (!v) return nullptr;
    if (std::isnan(*v)) return "nan";
    if (std::isinf(*v)) return *v > 0 ? "inf" : "-inf";
    return *v;
}

Json values_json(const std::vector<double>& values) {
    Json out = Json::array();
    for (double v : values) out.push_back(value_json(v));
    return out;
}

Json results_json(const std::vector<std::pair<std::string, std::string>>& results) {
    Json out = Json::array();
    for (const auto& [name, text] : results) out.push_back({{"name", name}, {"text", text}});
    return out;
}

bool make_valid_utf8(Json& j) {
    bool any = false, replaced = false;
    if (j.is_string()) {
        j = valid_utf8(j.get_ref<const std::string&>(), &replaced);
        return replaced;
    }
    if (j.is_array())
        for (Json& item : j) any = make_valid_utf8(item) || any;
    if (j.is_object()) {
        Json fixed = Json::object();
        for (auto& [key, item] : j.items()) {
            any = make_valid_utf8(item) || any;
            fixed[valid_utf8(key, &replaced)] = std::move(item);
            any = any || replaced;
        }
        j = std::move(fixed);
    }
    return any;
}

void Series::add(const std::string& name, std::size_t at, Value v) {
    auto [it, fresh] = values.try_emplace(name);
    if (fresh) names.push_back(name);
    it->second.resize(at + 1);
    it->second[at] = v;
}

Json Series::to_json(std::size_t steps) const {
    Json out = Json::object();
    for (const std::string& n : names) {
        const std::vector<Value>& v = values.at(n);
        Json row = Json::array();
        for (std::size_t i = 0; i < steps; ++i) row.push_back(value_json(i < v.size() ? v[i] : Value{}));
        out[n] = std::move(row);
    }
    return out;
}

}  // namespace xtgrad::report
