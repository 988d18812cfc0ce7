// JSON text from outside (a checkpoint's header or optimizer state, a report's data) parsed with
// its nesting and its size bounded. nlohmann's parser is iterative, but dump(), copies and
// comparisons of the value it builds recurse: a 100 000-deep list overflows the stack. Each
// value it builds costs 16 to ~100 bytes, several times its text: a 94 MB list of 47 M numbers
// took 2.4 GB. Both bounds are checked as each value is read, before it is built. Internal: only
// the library's sources include it.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <functional>
#include <string_view>

namespace xtgrad::detail {

struct JsonLimits {
    int max_depth;  // lists and objects opened deeper than this (the root is at depth 0) are refused
    // values in the whole text: numbers, strings, booleans, nulls, lists and objects. It bounds
    // the parsed value's memory (and so each list's and object's length), whatever the text's size.
    std::size_t max_values = std::size_t{1} << 22;
};

// A parser event (`key`: the key of an Event::key, else empty), for a caller that follows where
// the parser is (to name a field) or refuses keys (a key named twice).
using JsonEventCheck = std::function<void(nlohmann::json::parse_event_t event, std::string_view key)>;

// Errors "<what> nests lists and objects more than <max_depth> deep" and "<what> holds more
// than <max_values> values ...", and "<what>: out of memory ..." instead of std::bad_alloc.
// Text that is not JSON stays nlohmann's exception, for the caller to word. `check`, if given,
// sees every event after the bounds; it may throw. Linear in the text (nlohmann's callback
// parser, used before, scans the parent after each nested object: 18 s for 40 000 entries).
nlohmann::json parse_bounded_json(std::string_view text, JsonLimits limits, std::string_view what,
                                  const JsonEventCheck& check = nullptr);

}  // namespace xtgrad::detail
