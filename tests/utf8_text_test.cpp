// autograd/utf8_text.hpp: which bytes are UTF-8 (Unicode's table 3-7), and why a byte begins no
// well-formed sequence, in the words a message gives the user.
#include <xtgrad/autograd/utf8_text.hpp>

#include <doctest/doctest.h>

#include <string>

TEST_SUITE_BEGIN("io");

using xtgrad::first_invalid_utf8;
using xtgrad::utf8_fault;

TEST_CASE("utf8_fault names why a byte begins no UTF-8 sequence: stray, overlong, surrogate, past U+10FFFF, cut short") {
    struct Case {
        std::string text, fault;
    };
    const Case cases[] = {
        {"\x80", "a continuation byte (0x80-0xbf) with no lead byte before it"},
        {"\xbf" "abc", "a continuation byte (0x80-0xbf) with no lead byte before it"},
        {"\xc0\xaf", "an overlong form (0xc0 and 0xc1 would encode U+0000-U+007F in two bytes)"},
        {"\xc1\x81", "an overlong form (0xc0 and 0xc1 would encode U+0000-U+007F in two bytes)"},
        {"\xe0\x80\xaf", "an overlong form (below U+0800 in three bytes)"},
        {"\xf0\x8f\xbf\xbf", "an overlong form (below U+10000 in four bytes)"},
        {"\xed\xa0\x80", "a UTF-16 surrogate (U+D800-U+DFFF), which UTF-8 never encodes"},
        {"\xed\xbf\xbf", "a UTF-16 surrogate (U+D800-U+DFFF), which UTF-8 never encodes"},
        {"\xf4\x90\x80\x80", "a code point past U+10FFFF, the last of Unicode"},
        {"\xf5\x80\x80\x80", "a byte that never occurs in UTF-8 (0xf5-0xff)"},
        {"\xff", "a byte that never occurs in UTF-8 (0xf5-0xff)"},
        {"\xe5\x8c", "a 3-byte sequence cut short by the end of the text"},  // 北 without its last byte
        {"\xe5", "a 3-byte sequence cut short by the end of the text"},
        {"\xe5\x8c" "a", "a 3-byte sequence cut short: its byte 3 (0x61) is no continuation byte"},
        {"\xc3" "x", "a 2-byte sequence cut short: its byte 2 (0x78) is no continuation byte"},
        {"\xf0\x9f\x98", "a 4-byte sequence cut short by the end of the text"},
        {"\xe0" "a", "a 3-byte sequence cut short: its byte 2 (0x61) is no continuation byte"},
        {"\xed", "a 3-byte sequence cut short by the end of the text"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.fault);
        CHECK(first_invalid_utf8(c.text) == 0);
        CHECK(utf8_fault(c.text) == c.fault);
    }
    // well-formed sequences have no fault: ASCII, 北, U+10FFFF, U+E000 (after the surrogates), the empty text
    for (const std::string ok : {"a", "\xe5\x8c\x97", "\xf4\x8f\xbf\xbf", "\xee\x80\x80", ""}) {
        CAPTURE(ok);
        CHECK(first_invalid_utf8(ok) == std::string::npos);
        CHECK(utf8_fault(ok).empty());
    }
}

TEST_CASE("escaped_for_message cuts a long text at a character's start and says how long it was") {
    using xtgrad::escaped_for_message;
    CHECK(escaped_for_message("abcdef", false, 6) == "abcdef");
    CHECK(escaped_for_message("abcdefg", false, 6) == "abcdef... (7 bytes in all)");
    // 北 is 3 bytes: a cut inside it backs off to its start rather than leave a stray byte
    CHECK(escaped_for_message("ab\xe5\x8c\x97z", false, 4) == "ab... (6 bytes in all)");
    CHECK(escaped_for_message("a\nb", false) == "a\\x0ab");
    CHECK(escaped_for_message("a\nb", true) == "a\nb");
}

TEST_SUITE_END();
