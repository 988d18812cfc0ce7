#include <xtgrad/report/report_data.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/io/bounded_json.hpp>
#include <xtgrad/autograd/utf8_text.hpp>

#include <fmt/format.h>

#include <limits>
#include <string_view>
#include <vector>

namespace xtgrad::report {

namespace {

using Json = nlohmann::json;
using Event = Json::parse_event_t;

// Where the parser is, from its events, to name the field of a parse error: "scalars.loss.value[3]".
class FieldPath {
public:
    void on(Event event, std::string_view key) {
        switch (event) {
            case Event::object_start: levels_.push_back({false, "", 0, false}); break;
            case Event::array_start: levels_.push_back({true, "", 0, false}); break;
            case Event::key: levels_.back().key = key, levels_.back().in_value = true; break;
            case Event::object_end:
            case Event::array_end: levels_.pop_back(); done(); break;
            case Event::value: done(); break;
        }
    }
    std::string str() const {
        std::string out;
        for (const Level& l : levels_) {
            if (l.array) {
                out += fmt::format("[{}]", l.index);
                continue;
            }
            if (!out.empty()) out += '.';
            if (l.in_value) out += l.key;
            else if (l.key.empty()) out += "(a key)";
            else out += fmt::format("(the key after '{}')", l.key);
        }
        return out.empty() ? "the top level" : valid_utf8(out);
    }

private:
    struct Level {
        bool array;
        std::string key;  // an object's last key
        std::size_t index;
        bool in_value;  // in the value of `key` (else between two members)
    };
    void done() {  // a value ended: the next element, or the next key
        if (levels_.empty()) return;
        if (levels_.back().array) ++levels_.back().index;
        else levels_.back().in_value = false;
    }
    std::vector<Level> levels_;
};

}  // namespace

Json parse_report_data(const std::string& text, const std::string& who) {
    FieldPath path;
    Json data;
    try {
        // no bound on the values: a report's data grows with its run's steps
        data = xtgrad::detail::parse_bounded_json(text, {kMaxReportNesting, std::numeric_limits<std::size_t>::max()}, who,
                                                  [&](Event event, std::string_view key) { path.on(event, key); });
    } catch (const Json::exception& e) {
        // nlohmann quotes the bytes it read last, which may be the invalid UTF-8 itself
        fail("{} is not JSON (in {}): {}", who, path.str(), valid_utf8(std::string(e.what()).substr(0, 200)));
    }
    if (!data.is_object() || !data.contains("scalars") || !data["scalars"].is_object())
        fail("{} is not a report's (no scalars)", who);
    return data;
}

}  // namespace xtgrad::report
