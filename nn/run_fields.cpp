#include <xtgrad/nn/run_fields.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/utf8_text.hpp>
#include <xtgrad/io/bounded_json.hpp>
#include <xtgrad/optim/schedule.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string_view>

namespace xtgrad::nn::detail {

namespace {

using json = nlohmann::json;

// A value from the file as an error message quotes it: at most 80 bytes, on one line, control
// bytes and bytes that are not UTF-8 escaped (a terminal escape must not reach the terminal).
std::string shown_field(std::string_view text) { return escaped_for_message(text, false, 80); }

bool finite_json_number(const json& v) { return v.is_number() && std::isfinite(v.get<double>()); }

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
        fail_field(key, fmt::format("'{}' is not a whole number in [{}, {}]", shown_field(value), min, max));
    return n;
}

json RunFields::parsed_json(const std::string& key) const {
    try {
        return xtgrad::detail::parse_bounded_json(text(key), {kMaxNesting},
                                                  fmt::format("load '{}': metadata entry '{}': the JSON", path_, key));
    } catch (const json::exception& e) {
        fail_field(key, fmt::format("not valid JSON ({})", shown_field(e.what())));
    }
}

const std::string& RunFields::param_groups() const {
    (void)parsed_json("optimizer.param_groups");  // nesting and syntax, with the file and entry named
    return text("optimizer.param_groups");
}

std::string RunFields::schedule() const {
    const nlohmann::json state = parsed_json("schedule");
    if (!state.is_object()) fail_field("schedule", "must be an object");
    const auto last = state.find("last_epoch");
    // unsigned: a negative or fractional number, or one past LRScheduler's bound, is not a step count
    if (last == state.end() || !last->is_number_unsigned() ||
        last->get<std::uint64_t>() > static_cast<std::uint64_t>(optim::LRScheduler::kMaxStep))
        fail_field("schedule", fmt::format("last_epoch must be a whole number in [0, {}]", optim::LRScheduler::kMaxStep));
    const auto lr = state.find("_last_lr");
    if (lr == state.end() || !lr->is_array() || lr->size() != 1 || !finite_json_number((*lr)[0]) || (*lr)[0].get<double>() < 0)
        fail_field("schedule", "_last_lr must be a list of one finite number >= 0");
    return state.dump();
}

void check_optimizer_entries(const char* verb, const std::string& path,
                             const std::vector<std::pair<std::string, Array>>& entries, long epoch) {
    if (epoch > 0 && entries.empty())
        fail("{} '{}': the run did {} epochs or steps but holds no optimizer state (no 'optimizer.state.*' entry)",
             verb, path, epoch);
}

}  // namespace xtgrad::nn::detail
