// The checks the optimizers share: an lr, each optimizer's options (torch.optim's, for the
// constructor, a step and a loaded state alike) and a loaded param group's fields. Internal.
#pragma once

#include <xtgrad/optim/optimizer.hpp>

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <utility>

namespace xtgrad::optim::checks {

// Every lr an optimizer takes (constructor, set_lr, a loaded state, a step). `call` follows `who`
// in the message (".step").
void check_lr(double lr, const char* who, const char* call = "");
void check_options(const SGDOptions& o, const char* who, const char* call = "");
void check_options(const AdamOptions& o, const char* who, const char* call = "");

// A value of a loaded param group as text for a message: short, whatever the file holds.
std::string shown(const nlohmann::json& v);
// A loaded state entry's name (a file's: any bytes) as a message quotes it: short, escaped.
std::string shown_name(const std::string& name);

// A loaded state entry "state.<i>.<key>" as (i, key), i written as state_dict() writes it: plain
// decimal digits, no sign, no leading zero ("state.03.exp_avg" beside "state.3.exp_avg" would give
// one parameter two moments, the last taken in silence); nothing for any other name.
std::optional<std::pair<std::size_t, std::string>> state_entry(const std::string& name);

// A param group's field: a finite number (an Error naming the key otherwise), a boolean (or `missing`).
double number_field(const nlohmann::json& group, const char* key);
bool bool_field(const nlohmann::json& group, const char* key, bool missing);

}  // namespace xtgrad::optim::checks
