// Text as JSON can hold it: a RunReport's labels come from users (a Latin-1 title, a byte-level
// token, a module name) and nlohmann refuses to write bytes that are not UTF-8; and text as a
// message can quote it. Internal.
#pragma once

#include <string>
#include <string_view>

namespace xtgrad::report {

// `text` with each byte that does not begin a well-formed UTF-8 sequence (Unicode's table 3-7:
// no overlong forms, no surrogates, nothing past U+10FFFF) replaced by U+FFFD; *replaced, if
// given, says whether any was.
std::string valid_utf8(std::string_view text, bool* replaced = nullptr);

// `text` as a message can quote it (the programs' usage errors quote the command line): each
// well-formed UTF-8 sequence kept (北京 stays readable), each byte that begins none, and each
// control byte but the newline, written as \xHH, so a message stays text a terminal shows as it is.
std::string escaped_for_message(std::string_view text);

}  // namespace xtgrad::report
