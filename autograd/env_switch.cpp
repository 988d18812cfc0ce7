#include <xtgrad/autograd/env_switch.hpp>
#include <xtgrad/autograd/utf8_text.hpp>

#include <xtgrad/autograd/error.hpp>

#include <fmt/format.h>

#include <cstdlib>
#include <string>
#include <string_view>

namespace xtgrad::detail {

SwitchValue switch_value(const EnvSwitch& s) {
    const char* env = std::getenv(s.name);
    if (env == nullptr || *env == '\0') return SwitchValue::unset;
    const std::string_view v(env);
    if (v == "1") return SwitchValue::on;
    if (v == "0") return SwitchValue::off;
    return SwitchValue::invalid;
}

void fail_invalid_switch(const EnvSwitch& s) {
    const char* env = std::getenv(s.name);
    fail_invalid_switch(s, env ? env : "");
}

void fail_invalid_switch(const EnvSwitch& s, std::string_view value) {
    fail("{}: '{}' is neither 1 ({}) nor 0 ({})", s.name, shown_env_value(value), s.on, s.off);
}

std::string shown_env_value(std::string_view value) {
    std::string cut;  // a backslash as \x5c too, or "\x01" typed would read as the byte 0x01
    for (const char c : value.substr(0, 40)) cut += c == '\\' ? std::string("\\x5c") : std::string(1, c);
    std::string shown = escaped_for_message(cut, /*keep_newlines=*/false);
    if (value.size() > 40) shown += fmt::format("... ({} bytes)", value.size());  // cut: say so, and how long
    return shown;
}

bool read_switch(const EnvSwitch& s) {
    switch (switch_value(s)) {
        case SwitchValue::unset: return s.unset_means();
        case SwitchValue::on: return true;
        case SwitchValue::off: return false;
        case SwitchValue::invalid: break;
    }
    fail_invalid_switch(s);
}

}  // namespace xtgrad::detail
