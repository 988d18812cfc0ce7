#include "nn/run_fields.hpp"

#include "autograd/error.hpp"

#include <charconv>
#include <cmath>
#include <set>
#include <string_view>

namespace xtgrad::nn::detail {

namespace {

using json = nlohmann::json;

// At most 80 characters of a value from the file, for error messages.
std::string shown(std::string_view text) {
    constexpr std::size_t kShown = 80;
    return text.size() <= kShown ? std::string(text) : fmt::format("{}... ({} bytes)", text.substr(0, kShown), text.size());
}

// The deepest nesting of lists and objects in JSON text (strings skipped), counted without
// recursion so that hostile text cannot exhaust the stack here either.
int nesting(std::string_view text) {
    int depth = 0, deepest = 0;
    bool in_string = false, escaped = false;
    for (char c : text) {
        if (in_string) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            deepest = std::max(deepest, ++depth);
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return deepest;
}

bool finite_number(const json& v) { return v.is_number() && std::isfinite(v.get<double>()); }

}  // namespace

void RunFields::fail_field(const std::string& key, const std::string& why) const {
    fail("load '{}': metadata entry '{}': {}", path_, key, why);
}

const std::string& RunFields::text(const std::string& key) const {
    const auto it = metadata_.find(key);
    if (it == metadata_.end()) fail("load '{}': a run checkpoint without the metadata entry '{}'", path_, key);
    return it->second;
}

long RunFields::whole_number(const std::string& key, long min, long max) const {
    const std::string& value = text(key);
    long n = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (value.empty() || ec != std::errc() || end != value.data() + value.size() || n < min || n > max)
        fail_field(key, fmt::format("'{}' is not a whole number in [{}, {}]", shown(value), min, max));
    return n;
}

json RunFields::parsed_json(const std::string& key) const {
    const std::string& value = text(key);
    if (nesting(value) > kMaxNesting)
        fail_field(key, fmt::format("the JSON nests lists and objects more than {} deep", kMaxNesting));
    try {
        return json::parse(value);
    } catch (const json::exception& e) {
        fail_field(key, fmt::format("not valid JSON ({})", shown(e.what())));
    }
}

json RunFields::param_groups(const optim::Optimizer& optimizer) const {
    const std::string key = "optimizer.param_groups";
    const nlohmann::json groups = parsed_json(key);
    if (!groups.is_array() || groups.size() != 1 || !groups[0].is_object())
        fail_field(key, "must be a list of one group (an object)");
    const nlohmann::json& group = groups[0];
    // What this optimizer writes is what it reads back: the same keys, of the same types.
    const nlohmann::json own = nlohmann::json::parse(optimizer.state_dict().param_groups)[0];
    const auto field = [&](const std::string& name) { return fmt::format("{} [0].{}", key, name); };
    for (const auto& [name, expected] : own.items()) {
        if (!group.contains(name)) fail_field(field(name), "missing");
        const nlohmann::json& v = group[name];
        if (name == "params") {
            if (!v.is_array() || v.size() != optimizer.params().size())
                fail_field(field(name), fmt::format("the saved group has {} parameters, this optimizer has {}",
                                                    v.is_array() ? v.size() : 0, optimizer.params().size()));
            for (std::size_t i = 0; i < v.size(); ++i)
                if (!v[i].is_number_unsigned() || v[i].get<std::uint64_t>() != i)
                    fail_field(field(name), fmt::format("entry {} must be {}", i, i));
        } else if (expected.is_boolean()) {
            if (!v.is_boolean()) fail_field(field(name), "must be true or false");
            if ((name == "amsgrad" || name == "maximize") && v.get<bool>())
                fail_field(field(name), "true is not supported by xtgrad's optimizers");
        } else if (expected.is_number()) {
            if (!finite_number(v) || v.get<double>() < 0)
                fail_field(field(name), fmt::format("must be a finite number >= 0, got {}", shown(v.dump())));
        } else if (expected.is_array()) {  // betas
            if (!v.is_array() || v.size() != expected.size())
                fail_field(field(name), fmt::format("must be a list of {} numbers", expected.size()));
            for (const nlohmann::json& x : v)
                if (!finite_number(x) || x.get<double>() < 0 || x.get<double>() >= 1)
                    fail_field(field(name), fmt::format("each must be a number in [0, 1), got {}", shown(v.dump())));
        } else {
            fail_field(field(name), "of a kind this program does not read");
        }
    }
    // SGD's (checked above: a boolean, and numbers beside it); another optimizer's extra keys are ignored.
    if (own.contains("nesterov") && group["nesterov"].get<bool>() &&
        !(group["momentum"].get<double>() > 0 && group["dampening"].get<double>() == 0))
        fail_field(field("nesterov"), "true needs momentum > 0 and dampening 0");
    return groups;
}

std::string RunFields::schedule() const {
    const nlohmann::json state = parsed_json("schedule");
    if (!state.is_object()) fail_field("schedule", "must be an object");
    const auto last = state.find("last_epoch");
    if (last == state.end() || !last->is_number_integer() || last->get<long>() < 0)
        fail_field("schedule", "last_epoch must be a whole number >= 0");
    const auto lr = state.find("_last_lr");
    if (lr == state.end() || !lr->is_array() || lr->size() != 1 || !finite_number((*lr)[0]) || (*lr)[0].get<double>() < 0)
        fail_field("schedule", "_last_lr must be a list of one finite number >= 0");
    return state.dump();
}

void check_optimizer_entries(const std::string& path, const optim::Optimizer& optimizer, const nlohmann::json& group,
                             const std::vector<std::pair<std::string, Array>>& entries, long epoch) {
    std::vector<std::string> buffers;
    if (dynamic_cast<const optim::Adam*>(&optimizer) != nullptr) buffers = {"exp_avg", "exp_avg_sq"};
    if (dynamic_cast<const optim::SGD*>(&optimizer) != nullptr && group.at("momentum").get<double>() != 0)
        buffers = {"momentum_buffer"};
    // "state.<i>.<key>" -> the keys present per parameter index (malformed names are left to
    // Optimizer::load_state_dict, which names them).
    std::map<std::string, std::set<std::string>> keys;
    for (const auto& [name, array] : entries) {
        const std::size_t dot = name.rfind('.');
        if (name.rfind("state.", 0) == 0 && dot > 6) keys[name.substr(6, dot - 6)].insert(name.substr(dot + 1));
    }
    if (epoch > 0 && keys.empty())
        fail("load '{}': the run did {} epochs or steps but holds no optimizer state (no 'optimizer.state.*' entry)",
             path, epoch);
    buffers.push_back("step");
    for (const auto& [index, present] : keys)
        for (const std::string& needed : buffers)
            if (present.count(needed) == 0)
                fail("load '{}': parameter {} has optimizer state without 'optimizer.state.{}.{}' (resuming would "
                     "start it from zeros)", path, index, index, needed);
}

}  // namespace xtgrad::nn::detail
