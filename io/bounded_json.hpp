// JSON text from outside (a checkpoint's header or optimizer state, a report's data) parsed with
// its nesting bounded. nlohmann's parser is iterative, but dump(), copies and comparisons of the
// value it builds recurse: a 100 000-deep list overflows the stack. The bound is checked from the
// parser's callback, before anything deeper is built. Internal: only the library's sources
// include it.
#pragma once

#include <nlohmann/json.hpp>

#include <string_view>

namespace xtgrad::detail {

// A list or object opened deeper than max_depth (the root is at depth 0) is an Error
// "<what> nests lists and objects more than <max_depth> deep". Text that is not JSON stays
// nlohmann's exception, for the caller to word. `check`, if given, sees every parser event after
// the bound (to refuse duplicate keys, to follow where the parser is).
nlohmann::json parse_bounded_json(std::string_view text, int max_depth, std::string_view what,
                                  const nlohmann::json::parser_callback_t& check = nullptr);

}  // namespace xtgrad::detail
