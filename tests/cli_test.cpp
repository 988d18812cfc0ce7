// The examples' command-line convention (examples/common/cli.hpp): counts read in decimal, refused
// with a message naming the option and the value; flags take no value.
#include "examples/common/cli.hpp"
#include "tests/test_util.hpp"

#include <string>
#include <vector>

TEST_SUITE_BEGIN("cli");

using namespace xtgrad;

namespace {

// `--n TEXT` parsed into an int with count_at_least(min): the value, or the error message.
struct Parsed {
    long value = -7;
    std::string error;
};
template <class T = int>
Parsed parse_count(const std::string& text, long long min, long long max = std::numeric_limits<int>::max()) {
    CLI::App app{"test", "test"};
    T n = -7;
    app.add_option("--n", n)->transform(cli::count_in(min, max));
    std::vector<std::string> args{text, "--n"};  // CLI11 parses a reversed vector
    try {
        app.parse(args);
    } catch (const CLI::ParseError& e) {
        return {-7, e.what()};
    }
    return {static_cast<long>(n), ""};
}

}  // namespace

TEST_CASE("count_in reads decimal digits with a sign, leading zeros and all, and nothing else") {
    CHECK(parse_count("10", 0).value == 10);
    CHECK(parse_count("010", 0).value == 10);  // CLI11's strtoll alone read octal 8
    CHECK(parse_count("007", 0).value == 7);
    CHECK(parse_count("+3", 0).value == 3);
    CHECK(parse_count("-0", 0).value == 0);
    CHECK(parse_count("0", 0).value == 0);
    CHECK(parse_count("2147483647", 0).value == 2147483647);
    CHECK(parse_count<long>("99999999999", 0, 999999999999999999).value == 99999999999);
    for (const char* bad : {"0x10", " 1", "1 ", "2.5", "", "-", "+", "1e3", "0b11", "1_000", "٣", "1\n", "\xff"}) {
        CAPTURE(bad);
        CHECK(parse_count(bad, 0).error.find("is not a whole number") != std::string::npos);
    }
}

TEST_CASE("count_in refuses a count outside its range, naming it, and never wraps or saturates") {
    CHECK(parse_count("0", 1).error == "--n: 0 is below 1");
    CHECK(parse_count("-1", 0).error == "--n: -1 is below 0");
    CHECK(parse_count("2147483648", 0).error == "--n: 2147483648 is above 2147483647");
    CHECK(parse_count("99999999999999999999", 0).error == "--n: 99999999999999999999 is above 2147483647");
    CHECK(parse_count("-99999999999999999999", 0).error == "--n: -99999999999999999999 is below 0");
    CHECK(parse_count<long>("9223372036854775808", 0, 999999999999999999).error.find("is above") != std::string::npos);
    const std::string long_text(200, '9');  // the message quotes 40 characters of it
    CHECK(parse_count(long_text, 0).error == "--n: " + std::string(40, '9') + "... is above 2147483647");
}

TEST_CASE("parse_or_exit refuses a value given to a flag (exit 2) and takes the flag alone") {
    auto run = [](std::vector<std::string> args) {
        CLI::App app{"test", "test"};
        bool listed = false;
        app.add_flag("--list", listed, "a flag");
        std::vector<char*> argv;
        for (std::string& a : args) argv.push_back(a.data());
        const std::optional<int> status = cli::parse_or_exit(app, static_cast<int>(argv.size()), argv.data());
        return std::pair{status, listed};
    };
    CHECK(run({"test", "--list"}) == std::pair{std::optional<int>{}, true});
    CHECK(run({"test"}) == std::pair{std::optional<int>{}, false});
    for (const char* bad : {"--list=0", "--list=false", "--list=2", "--list=no", "--list="}) {
        CAPTURE(bad);
        const auto [status, listed] = run({"test", bad});
        if (std::string(bad) == "--list=") {  // an empty value is the flag itself in CLI11
            CHECK(status == std::nullopt);
            continue;
        }
        CHECK(status == std::optional<int>{cli::kUsageError});
        CHECK_FALSE(listed);
    }
}
TEST_SUITE_END();
