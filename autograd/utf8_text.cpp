#include <xtgrad/autograd/utf8_text.hpp>

#include <fmt/format.h>

namespace xtgrad {

namespace {

// The length of the well-formed sequence at the start of `s`, or 0.
std::size_t sequence_length(std::string_view s) {
    const auto at = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
    const auto in = [&](std::size_t i, unsigned lo, unsigned hi) { return i < s.size() && at(i) >= lo && at(i) <= hi; };
    const unsigned b = at(0);
    if (b <= 0x7F) return 1;
    if (b >= 0xC2 && b <= 0xDF) return in(1, 0x80, 0xBF) ? 2 : 0;
    if (b >= 0xE0 && b <= 0xEF) {
        const unsigned lo = b == 0xE0 ? 0xA0 : 0x80, hi = b == 0xED ? 0x9F : 0xBF;  // no overlong form, no surrogate
        return in(1, lo, hi) && in(2, 0x80, 0xBF) ? 3 : 0;
    }
    if (b >= 0xF0 && b <= 0xF4) {
        const unsigned lo = b == 0xF0 ? 0x90 : 0x80, hi = b == 0xF4 ? 0x8F : 0xBF;  // no overlong form, <= U+10FFFF
        return in(1, lo, hi) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
    }
    return 0;
}

}  // namespace

std::string valid_utf8(std::string_view text, bool* replaced) {
    std::string out;
    out.reserve(text.size());
    bool any = false;
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t n = sequence_length(text.substr(i));
        if (n == 0) {
            out += "\xEF\xBF\xBD";  // U+FFFD
            any = true;
            ++i;
        } else {
            out.append(text.substr(i, n));
            i += n;
        }
    }
    if (replaced) *replaced = any;
    return out;
}

std::size_t first_invalid_utf8(std::string_view text) {
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t n = sequence_length(text.substr(i));
        if (n == 0) return i;
        i += n;
    }
    return std::string_view::npos;
}

std::string utf8_fault(std::string_view text) {
    if (text.empty() || sequence_length(text) != 0) return {};
    const auto at = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    const unsigned b = at(0);
    if (b >= 0x80 && b <= 0xBF) return "a continuation byte (0x80-0xbf) with no lead byte before it";
    if (b == 0xC0 || b == 0xC1) return "an overlong form (0xc0 and 0xc1 would encode U+0000-U+007F in two bytes)";
    if (b >= 0xF5) return "a byte that never occurs in UTF-8 (0xf5-0xff)";
    const bool second = text.size() > 1;
    if (b == 0xE0 && second && at(1) >= 0x80 && at(1) <= 0x9F) return "an overlong form (below U+0800 in three bytes)";
    if (b == 0xF0 && second && at(1) >= 0x80 && at(1) <= 0x8F) return "an overlong form (below U+10000 in four bytes)";
    if (b == 0xED && second && at(1) >= 0xA0 && at(1) <= 0xBF)
        return "a UTF-16 surrogate (U+D800-U+DFFF), which UTF-8 never encodes";
    if (b == 0xF4 && second && at(1) >= 0x90 && at(1) <= 0xBF) return "a code point past U+10FFFF, the last of Unicode";
    // a lead byte whose continuation bytes are missing
    const std::size_t length = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2;
    for (std::size_t i = 1; i < length; ++i) {
        if (i >= text.size()) return fmt::format("a {}-byte sequence cut short by the end of the text", length);
        if (at(i) < 0x80 || at(i) > 0xBF)
            return fmt::format("a {}-byte sequence cut short: its byte {} (0x{:02x}) is no continuation byte", length,
                               i + 1, at(i));
    }
    return "not well-formed";  // every case is named above
}

std::string escaped_for_message(std::string_view text, bool keep_newlines, std::size_t max_bytes) {
    std::string out;
    if (text.size() > max_bytes) {
        std::size_t cut = max_bytes;  // back to the start of the character it would split (at most 3 bytes)
        for (int i = 0; i < 3 && cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80; ++i) --cut;
        return escaped_for_message(text.substr(0, cut), keep_newlines) + fmt::format("... ({} bytes in all)", text.size());
    }
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const auto byte = static_cast<unsigned char>(text[i]);
        const std::size_t n = sequence_length(text.substr(i));
        // A control (ESC, CR; U+0080-U+009F, whose CSI starts escape codes too) could rewrite
        // what the terminal shows; a stray byte is no text
        const bool control = (byte < 0x20 && !(byte == '\n' && keep_newlines)) || byte == 0x7F ||
                             (n == 2 && byte == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0);
        if (n == 0 || control) {  // each byte of it: a C1 control as \xc2\x9b
            out += fmt::format("\\x{:02x}", byte);
            ++i;
        } else {
            out.append(text.substr(i, n));
            i += n;
        }
    }
    return out;
}

}  // namespace xtgrad
