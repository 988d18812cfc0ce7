#include <xtgrad/autograd/env_switch.hpp>

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
    fail("{}: '{}' is neither 1 ({}) nor 0 ({})", s.name, shown_env_value(env ? env : ""), s.on, s.off);
}

std::string shown_env_value(std::string_view value) {
    std::string shown;
    for (const char c : value.substr(0, 40)) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte >= 0x20 && byte < 0x7f && c != '\\') shown += c;  // a backslash too, or "\x01" would read as 0x01
        else shown += fmt::format("\\x{:02x}", byte);  // a newline, a control or a non-ASCII byte, shown
    }
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
