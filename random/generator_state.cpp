// A generator's state as bytes (Generator::state / set_state), for checkpoints.
//
// The bytes are text, one space between fields:
//   check:<16 hex digits> <seed> <cached normal's bits, or "-"> <624 words> <position>
// The check is FNV-1a (64 bits) of everything after its field: a state cut short, joined to
// another or changed by a byte is refused, where every prefix of the fields would read as some
// state (a position "624" cut to "62" is a position too). Earlier builds wrote the same fields
// without the check; such a state still loads, its fields read as strictly.
#include <xtgrad/random/random.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/utf8_text.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <locale>
#include <sstream>
#include <string_view>

namespace xtgrad {

namespace {

constexpr std::string_view kCheckPrefix = "check:";
constexpr std::size_t kFields = 2 + Mt19937::state_size + 1;  // seed, cached normal, the words, the position

std::uint64_t fnv1a64(std::string_view text) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (const char c : text) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
    return h;
}

// What field k (0-based, after the check) holds, for a message.
std::string field_name(std::size_t k) {
    if (k == 0) return "field 1 (the seed)";
    if (k == 1) return "field 2 (the cached normal's bits, or '-')";
    if (k < kFields - 1) return fmt::format("field {} (Mersenne Twister word {} of 624)", k + 1, k - 2);
    return fmt::format("field {} (the position in the words)", k + 1);
}

[[noreturn]] void refuse(std::size_t size, const std::string& why) {
    fail("Generator::set_state: {} bytes that are not a generator state: {}", size, why);
}

// A decimal number from 0 to `max`: digits only (no sign, no space), as state() writes them.
std::uint64_t read_number(std::string_view token, std::uint64_t max, std::size_t k, std::size_t size) {
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
    if (token.empty() || ec != std::errc() || end != token.data() + token.size() || v > max)
        refuse(size, fmt::format("{} is '{}', not a decimal number from 0 to {}", field_name(k),
                                 escaped_for_message(token, false, 40), max));
    return v;
}

}  // namespace

std::vector<std::uint8_t> Generator::state() const {
    std::ostringstream out;
    out.imbue(std::locale::classic());  // plain digits whatever the program's global locale (no "123,456")
    out << seed_ << ' ';
    if (next_normal_) out << std::bit_cast<std::uint64_t>(*next_normal_);
    else out << '-';
    out << ' ' << engine_;
    const std::string fields = out.str();
    const std::string text = fmt::format("{}{:016x} {}", kCheckPrefix, fnv1a64(fields), fields);
    return {text.begin(), text.end()};
}

void Generator::set_state(const std::vector<std::uint8_t>& bytes) {
    const std::string all(bytes.begin(), bytes.end());
    std::string_view text = all;
    const std::size_t size = bytes.size();
    std::size_t offset = 0;  // of `text` in the bytes
    std::optional<std::uint64_t> check;
    if (text.starts_with(kCheckPrefix)) {
        const std::string_view hex = text.substr(kCheckPrefix.size(), 16);
        std::uint64_t v = 0;
        const auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), v, 16);
        if (hex.size() != 16 || ec != std::errc() || end != hex.data() + 16 || text.substr(kCheckPrefix.size() + 16, 1) != " ")
            refuse(size, "its check field is not 'check:' and 16 hex digits followed by a space");
        check = v;
        offset = kCheckPrefix.size() + 17;
        text.remove_prefix(offset);
    }
    // The fields, one space between each; the position ends the state.
    std::uint64_t seed = 0;
    std::optional<double> next_normal;
    std::array<Mt19937::result_type, Mt19937::state_size> words{};
    std::size_t position = 0, at = 0;
    for (std::size_t k = 0; k < kFields; ++k) {
        if (at > text.size()) refuse(size, fmt::format("it ends after {} of its {} fields", k, kFields));
        // a field ends at a space; the position, the last, at its last digit (what follows is trailing)
        const bool last = k + 1 == kFields;
        const std::size_t end = std::min(last ? text.find_first_not_of("0123456789", at) : text.find(' ', at), text.size());
        const std::string_view token = text.substr(at, end - at);
        if (k == 0) {
            seed = read_number(token, UINT64_MAX, k, size);
        } else if (k == 1) {
            if (token != "-") {
                // a cached normal is the second of a Box-Muller pair: finite (a NaN here makes randn NaN)
                const double v = std::bit_cast<double>(read_number(token, UINT64_MAX, k, size));
                if (!std::isfinite(v)) refuse(size, fmt::format("{} holds {}, where a normal is finite", field_name(k), v));
                next_normal = v;
            }
        } else if (!last) {
            words[k - 2] = static_cast<Mt19937::result_type>(read_number(token, UINT32_MAX, k, size));
        } else {
            position = read_number(token, Mt19937::state_size, k, size);
        }
        at = end + 1;
    }
    const std::size_t state_end = at - 1;  // the position's last byte + 1
    // the position ends a state: more after it is a blob cut or joined wrongly, not a state
    if (state_end < text.size())
        refuse(size, fmt::format("{} trailing bytes after its end at byte {}", text.size() - state_end, offset + state_end));
    if (check && *check != fnv1a64(text))
        refuse(size, fmt::format("its check (FNV-1a {:016x}) does not match its fields ({:016x}): the state was cut or "
                                 "changed", *check, fnv1a64(text)));
    const Mt19937 engine = Mt19937::from_words(words, position);
    // torch refuses an invalid Mersenne Twister state too; this one would draw 0 for ever
    if (engine.stuck())
        fail("Generator::set_state: the Mersenne Twister state is all zero (word 0's top bit and words 1-623), so every "
             "draw after it would be 0");
    seed_ = seed, next_normal_ = next_normal, engine_ = engine;
}

}  // namespace xtgrad
