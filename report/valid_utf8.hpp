// Text as JSON can hold it: a RunReport's labels come from users (a Latin-1 title, a byte-level
// token, a module name) and nlohmann refuses to write bytes that are not UTF-8. Internal.
#pragma once

#include <string>
#include <string_view>

namespace xtgrad::report {

// `text` with each byte that does not begin a well-formed UTF-8 sequence (Unicode's table 3-7:
// no overlong forms, no surrogates, nothing past U+10FFFF) replaced by U+FFFD; *replaced, if
// given, says whether any was.
std::string valid_utf8(std::string_view text, bool* replaced = nullptr);

}  // namespace xtgrad::report
