// Text from users made safe to keep or show: as JSON can hold it (a RunReport's labels: a Latin-1
// title, a byte-level token, a module name; nlohmann refuses bytes that are not UTF-8), and as a
// message can quote it (a command line, a path, an environment variable's value). Internal.
#pragma once

#include <string>
#include <string_view>

namespace xtgrad {

// `text` with each byte that does not begin a well-formed UTF-8 sequence (Unicode's table 3-7:
// no overlong forms, no surrogates, nothing past U+10FFFF) replaced by U+FFFD; *replaced, if
// given, says whether any was.
std::string valid_utf8(std::string_view text, bool* replaced = nullptr);

// The offset of the first byte of `text` that begins no well-formed UTF-8 sequence (as
// valid_utf8 reads it), or std::string_view::npos if the whole text is UTF-8.
std::size_t first_invalid_utf8(std::string_view text);

// Why the bytes at the start of `text` begin no well-formed UTF-8 sequence, for a message: "a
// continuation byte (0x80-0xbf) with no lead byte before it", "an overlong form ...", "a UTF-16
// surrogate (U+D800-U+DFFF), which UTF-8 never encodes", "past U+10FFFF", "a 3-byte sequence cut
// short by the end of the text" ... Empty if it does begin one.
std::string utf8_fault(std::string_view text);

// `text` as a message can quote it (a usage error quotes the command line): each well-formed
// UTF-8 sequence kept (北京 stays readable), each byte that begins none and each control byte
// (C0, DEL, C1) written as \xHH, so a message stays text a terminal shows as it is. A newline is
// kept where the message may span lines (an Error's), escaped where it must be one line (a value).
// Text longer than `max_bytes` is cut there (at a character's start) and marked "... (N bytes in
// all)", so a 100 MB value never makes a 100 MB message and a cut one never reads as whole.
std::string escaped_for_message(std::string_view text, bool keep_newlines = true,
                                std::size_t max_bytes = std::string_view::npos);

}  // namespace xtgrad
