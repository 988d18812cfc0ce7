#include <xtgrad/optim/option_checks.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/utf8_text.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <string_view>

namespace xtgrad::optim::checks {

// Every lr an optimizer takes (constructor, set_lr, a loaded state, a step): torch takes 0; NaN,
// Inf or a negative one makes the parameters NaN or moves them uphill. `call` follows `who` in the
// message (".step"): formatted only on failure, as a step in backward checks once per parameter.
void check_lr(double lr, const char* who, const char* call) {
    if (!(lr >= 0) || !std::isfinite(lr)) fail("{}{}: lr must be a finite number >= 0, got {}", who, call, lr);
}

// torch.optim.SGD's checks, for the constructor and for a loaded state alike.
void check_options(const SGDOptions& o, const char* who, const char* call) {
    check_lr(o.lr(), who, call);
    if (!(o.momentum() >= 0) || !std::isfinite(o.momentum()))
        fail("{}{}: momentum must be a finite number >= 0, got {}", who, call, o.momentum());
    if (!std::isfinite(o.dampening())) fail("{}{}: dampening must be finite, got {}", who, call, o.dampening());
    if (!(o.weight_decay() >= 0) || !std::isfinite(o.weight_decay()))
        fail("{}{}: weight_decay must be a finite number >= 0, got {}", who, call, o.weight_decay());
    if (o.nesterov() && (o.momentum() <= 0 || o.dampening() != 0))
        fail("{}{}: nesterov needs momentum > 0 and dampening 0 (got momentum {}, dampening {})", who, call, o.momentum(),
             o.dampening());
}

// torch.optim.Adam's checks.
void check_options(const AdamOptions& o, const char* who, const char* call) {
    check_lr(o.lr(), who, call);
    if (!(o.betas().first >= 0 && o.betas().first < 1 && o.betas().second >= 0 && o.betas().second < 1))
        fail("{}{}: betas must be in [0, 1), got ({}, {})", who, call, o.betas().first, o.betas().second);
    if (!(o.eps() >= 0) || !std::isfinite(o.eps())) fail("{}{}: eps must be a finite number >= 0, got {}", who, call, o.eps());
    if (!(o.weight_decay() >= 0) || !std::isfinite(o.weight_decay()))
        fail("{}{}: weight_decay must be a finite number >= 0, got {}", who, call, o.weight_decay());
}

std::string shown(const nlohmann::json& v) { return escaped_for_message(v.dump(), false, 80); }

std::string shown_name(const std::string& name) { return escaped_for_message(name, false, 120); }

std::optional<std::pair<std::size_t, std::string>> state_entry(const std::string& name) {
    const std::string_view prefix = "state.";
    const std::size_t dot = name.find('.', prefix.size());
    std::string_view index;  // the digits between "state." and the next '.'
    if (name.starts_with(prefix) && dot != std::string::npos)
        index = std::string_view(name).substr(prefix.size(), dot - prefix.size());
    // at most 9 digits: no overflow, and far more parameters than any optimizer has
    const bool canonical = !index.empty() && dot + 1 < name.size() && index.size() <= 9 && (index == "0" || index[0] != '0') &&
                           std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!canonical) return std::nullopt;
    std::size_t i = 0;
    for (char c : index) i = i * 10 + static_cast<std::size_t>(c - '0');
    return std::pair{i, name.substr(dot + 1)};
}

double number_field(const nlohmann::json& group, const char* key) {
    const auto it = group.find(key);
    if (it == group.end()) fail("optimizer state: the param group has no '{}'", key);
    if (!it->is_number()) fail("optimizer state: the param group's '{}' must be a number, got {}", key, shown(*it));
    const double v = it->get<double>();
    if (!std::isfinite(v)) fail("optimizer state: the param group's '{}' must be finite, got {}", key, v);
    return v;
}

bool bool_field(const nlohmann::json& group, const char* key, bool missing) {
    const auto it = group.find(key);
    if (it == group.end()) return missing;
    if (!it->is_boolean()) fail("optimizer state: the param group's '{}' must be true or false, got {}", key, shown(*it));
    return it->get<bool>();
}


}  // namespace xtgrad::optim::checks
