// A parity fixture's meta.json (docs/fixtures.md), read and checked before any runner sees it: the
// fields every runner reads have their types, the names that become file names are file keys, the
// numbers that size a loop are bounded. A malformed meta.json is one Error naming the field, never
// nlohmann's type error deep in a runner, a read outside the fixture's folder, or a loop of 10^18
// steps. Only nlohmann, fmt and the library's bounded JSON parser: fuzz/fixture_meta_fuzzer.cpp
// links it alone.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace xtgrad::parity {

using json = nlohmann::json;

// Extra absolute error a tensor may have, and why (e.g. meta.relu_kinks: ReLU inputs within rounding of zero).
struct Allowance {
    double atol = 0;
    std::string why;
};

inline constexpr std::uint64_t kMaxMetaBytes = std::uint64_t{1} << 26;  // 64 MiB; the committed ones are ≤ 52 KB
inline constexpr long kMaxFixtureSteps = 100000;                         // optimizer and training steps

// A value from the file as a message shows it: JSON text, strings quoted with their control bytes
// escaped, bytes that are not UTF-8 replaced, cut at 60 characters.
std::string shown_value(const json& v);

// Whether v is a whole number in [lowest, highest] as a long reads it (get<long>() cuts 3.5 to 3
// and leaves 1e300 undefined).
bool is_whole_in(const json& v, long lowest, long highest);

// A name a fixture may turn into a file name (inputs, parameters, gradients): 1 to 200 characters
// of A-Z a-z 0-9 . _ - (so never a path out of the folder).
bool is_fixture_key(std::string_view name);

// `text` parsed (nesting ≤ 32, ≤ 2^20 values) and checked; `where` names it in errors
// ("parity: DIR/meta.json: params[2].name must be ...").
json parse_fixture_meta(std::string_view text, const std::string& where);

// DIR/meta.json read (a regular file of at most kMaxMetaBytes) and parsed as above.
json read_fixture_meta(const std::string& dir);

// meta.relu_kinks (docs/fixtures.md, section Kinks): gradient key -> how far ReLU inputs within
// rounding of zero may move it. Empty when the case has none.
std::map<std::string, Allowance> kink_allowances(const json& meta, const std::string& where);

}  // namespace xtgrad::parity
