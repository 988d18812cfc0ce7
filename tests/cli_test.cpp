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
    // the whole long long range (--seed): 19 digits read exactly, one past it refused
    CHECK(parse_count<long long>("9223372036854775807", 0, std::numeric_limits<long long>::max()).value ==
          std::numeric_limits<long long>::max());
    CHECK(parse_count<long long>("9223372036854775808", 0, std::numeric_limits<long long>::max()).error ==
          "--n: 9223372036854775808 is above 9223372036854775807");
    CHECK(parse_count<long long>("-9223372036854775808", std::numeric_limits<long long>::min(), 0).value ==
          std::numeric_limits<long long>::min());
    CHECK(parse_count<long long>("18446744073709551616", 0, std::numeric_limits<long long>::max()).error.find("is above") !=
          std::string::npos);  // past 2^64 - 1
    const std::string long_text(200, '9');  // the message quotes 40 characters of it
    CHECK(parse_count(long_text, 0).error == "--n: " + std::string(40, '9') + "... is above 2147483647");
}

namespace {
struct ParsedRun {
    std::optional<int> status;
    bool listed = false;
    std::string out;
};
// parse_or_exit on a program with a flag --list and an option --out
ParsedRun run_cli(std::vector<std::string> args) {
    CLI::App app{"test", "test"};
    ParsedRun r;
    app.add_flag("--list", r.listed, "a flag");
    app.add_option("--out", r.out, "a folder");
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    r.status = cli::parse_or_exit(app, static_cast<int>(argv.size()), argv.data());
    return r;
}
}  // namespace

TEST_CASE("parse_or_exit refuses a value given to a flag (exit 2) and takes the flag alone") {
    CHECK(run_cli({"test", "--list"}).status == std::nullopt);
    CHECK(run_cli({"test", "--list"}).listed);
    CHECK_FALSE(run_cli({"test"}).listed);
    for (const char* bad : {"--list=0", "--list=false", "--list=2", "--list=no", "--list=", "--list= ", "--list=true"}) {
        CAPTURE(bad);
        const ParsedRun r = run_cli({"test", bad});
        CHECK(r.status == std::optional<int>{cli::kUsageError});
        CHECK_FALSE(r.listed);
    }
}

TEST_CASE("parse_or_exit refuses an option with nothing after '=' rather than take the next argument") {
    // CLI11 read `--out= --help` as --out "--help": a run into a folder named --help
    for (const std::vector<std::string>& bad : {std::vector<std::string>{"test", "--out=", "--help"},
                                                std::vector<std::string>{"test", "--out=", "--list"},
                                                std::vector<std::string>{"test", "--out="}}) {
        const ParsedRun r = run_cli(bad);
        CHECK(r.status == std::optional<int>{cli::kUsageError});
        CHECK(r.out.empty());
        CHECK_FALSE(r.listed);
    }
    CHECK(run_cli({"test", "--out=runs"}).out == "runs");
    CHECK(run_cli({"test", "--out", "runs"}).out == "runs");
    CHECK(run_cli({"test", "--", "--out="}).status != std::nullopt);  // past --: not an option (CLI11 refuses the extra)
}

TEST_CASE("error_message: \"PROGRAM: message\", a stray byte and a control as \\xHH, UTF-8 text and newlines kept") {
    CLI::App app{"test", "test"};
    CHECK(cli::error_message(app, "--config: \xff not in {a,b}", true) ==
          "test: --config: \\xff not in {a,b}\nRun with --help for more information.\n");
    CHECK(cli::error_message(app, "--out '北京'", false) == "test: --out '北京'\n");
    // ESC, CR, DEL, a C1 control (U+009B, CSI) and a cut sequence: each byte shown, none sent
    CHECK(cli::error_message(app, "a\x1b[31mb\rc\x7f\xc2\x9b" "2J\xe5\x8c", false) ==
          "test: a\\x1b[31mb\\x0dc\\x7f\\xc2\\x9b2J\\xe5\\x8c\n");
    CHECK(cli::error_message(app, "line 1\nline 2\ttab", false) == "test: line 1\nline 2\\x09tab\n");
    CHECK(cli::error_message(app, "", false) == "test: \n");
}
TEST_SUITE_END();
