// The parts of a run report's data as JSON (RunReport::data_json): values that keep NaN and
// infinity apart from "not measured", per-module curves, labels made valid UTF-8. Internal.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace xtgrad::report {

using Value = std::optional<double>;  // nullopt: not measured at that step (JSON null)

// JSON has no NaN or infinity, and null means "not measured": a non-finite value is written as
// the string "nan", "inf" or "-inf", so a diverged run never reads as one that stopped logging.
nlohmann::json value_json(Value v);
nlohmann::json values_json(const std::vector<double>& values);
// RunReport::result's lines, in order: [{"name", "text"}, ...].
nlohmann::json results_json(const std::vector<std::pair<std::string, std::string>>& results);

// Every string of a JSON value (keys too) as valid UTF-8; says whether any was not.
bool make_valid_utf8(nlohmann::json& j);

// One curve per name, aligned with a list of steps (null where a step has no value).
struct Series {
    std::vector<std::string> names;
    std::map<std::string, std::vector<Value>> values;
    void add(const std::string& name, std::size_t at, Value v);
    nlohmann::json to_json(std::size_t steps) const;
};

}  // namespace xtgrad::report
