// The command-line convention of every xtgrad program (examples, bench, tools/parity), in one
// place:
//   - CLI11; --help describes every option, then the exit codes and the environment
//     variables that matter (cli_footer());
//   - an option given twice: the last one counts;
//   - exit 0 success, 1 runtime error, 2 usage error (a bad option, found by CLI11 or by the
//     program's own checks before any work starts); no exception escapes main (run_main());
//   - --threads N means one thing everywhere: N threads for the GEMM backend and N for xtgrad's own
//     kernels (set_blas_threads and set_num_threads), the calling thread included.
#pragma once

#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/simd/cpu_isa.hpp>
#include <xtgrad/autograd/environment.hpp>
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/utf8_text.hpp>
#include <xtgrad/threads/parallel.hpp>

#include "examples/common/cli11.hpp"
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <exception>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace xtgrad::cli {

enum ExitCode : int { kSuccess = 0, kRuntimeError = 1, kUsageError = 2 };

// A bad option found after parsing (an index beyond the model, a folder that cannot be
// written): exit 2 like CLI11's own errors.
class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

template <typename... Args>
[[noreturn]] void usage_error(fmt::format_string<Args...> format, Args&&... args) {
    throw UsageError(fmt::format(format, std::forward<Args>(args)...));
}

inline std::string cli_footer(const std::string& extra = "") {
    return extra + (extra.empty() ? "" : "\n\n") +
           "Exit status: 0 success, 1 runtime error (bad file, non-finite loss, failed check), 2 usage error.\n"
           "\n"
           "Environment:\n"
           "  XTGRAD_TRACE=1             print every backward node as it runs (op, gradient shape and norm, module)\n"
           "  XTGRAD_BREAK_OP=OP         call xtgrad::debug::matched_node before each backward node of op OP\n"
           "                             (e.g. SoftmaxBackward), for a gdb breakpoint (docs/debugging.md)\n"
           "  XTGRAD_BREAK_MODULE=PATH   the same for the nodes of a module path (e.g. encoder.layers.0)\n"
           "  XTGRAD_BREAK_TRAP=1        also raise SIGTRAP on a match (stops any debugger)\n"
           "  XTGRAD_ISA=baseline        xtgrad's own vector kernels without AVX-512 even where the CPU has it\n"
           "  XTGRAD_GEMM_PROFILE=1      at exit, print each matrix-product shape's calls, time and GFLOP/s to stderr\n"
           "  XTGRAD_GEMM_BACKEND=openblas|onednn   the library of the large matrix products (unset: the build's\n"
           "                             default, oneDNN where it is built)\n"
           "  XTGRAD_BLOCK_CACHE=0|1     0: arrays of 1 MiB and more from the C heap (for heaptrack or valgrind);\n"
           "                             1: from the block cache (less memory); unset: on where this machine's\n"
           "                             page moves are cheap (measured at start-up)\n"
           "                             (docs/architecture.md, \"Where the blocks live\")\n"
           "  XTGRAD_SMALL_GEMM=0|1 and the other speed switches: a speed mechanism off (0) or on (1); unset: the\n"
           "                             CPU's default (their list: xtgrad_bench --list-switches; docs/performance.md)\n"
           "  XTGRAD_DIST_TIMEOUT=300    under mpirun: seconds a collective may wait for the other processes\n"
           "                             (a positive number, or with a unit: 90s, 5m, 1h)\n"
           "  OPENBLAS_NUM_THREADS,      ignored where --threads is an option: --threads sets the GEMM backend's\n"
           "  OMP_NUM_THREADS            threads (oneDNN or OpenBLAS) and xtgrad's own (set_blas_threads, set_num_threads)";
}

// Real-valued options: CLI11's PositiveNumber and Range let NaN through (every comparison with
// NaN is false) and PositiveNumber lets inf through, so these check finiteness first; a value
// outside is a usage error (exit 2) naming the option's value.
inline CLI::Validator finite_range(double min, double max, bool min_excluded = false) {
    return CLI::Validator(
        [=](std::string& text) -> std::string {
            double v = 0;
            if (!CLI::detail::lexical_cast(text, v)) return "'" + text + "' is not a number";
            if (!std::isfinite(v)) return "'" + text + "' is not a finite number";
            if (v < min || v > max || (min_excluded && v == min))
                return fmt::format("{} is not in {}{:g}, {:g}]", text, min_excluded ? "(" : "[", min, max);
            return {};
        },
        fmt::format("FINITE in {}{:g}, {:g}]", min_excluded ? "(" : "[", min, max));
}
// Whole-number counts (--steps, --warmup, --save-every) in [min, max], for ->transform(): ASCII
// decimal digits with an optional sign, rewritten without leading zeros before CLI11 converts the
// text (its strtoll reads 010 as octal 8, 0x10 as 16, " 1" as 1, and gives LLONG_MAX past it).
// CLI11's PositiveNumber said "Value 0 not in range 0.000000 to 1.79769e+308"; this says
// "--steps: 0 is below 1".
inline CLI::Validator count_in(long long min, long long max) {
    return CLI::Validator(
        [=](std::string& text) -> std::string {
            const std::string shown = text.size() > 40 ? text.substr(0, 40) + "..." : text;
            const bool negative = !text.empty() && text[0] == '-';
            std::size_t i = !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
            if (i == text.size() || text.find_first_not_of("0123456789", i) != std::string::npos)
                return "'" + shown + "' is not a whole number";
            while (i + 1 < text.size() && text[i] == '0') ++i;  // 010 is ten
            // the magnitude, exact up to 2^64 - 1; past it, or past what a long long holds, out of range
            unsigned long long magnitude = 0;
            const char* digits = text.data() + i;
            const auto [end, error] = std::from_chars(digits, text.data() + text.size(), magnitude);
            const unsigned long long limit = negative ? 1ull << 63 : (1ull << 63) - 1;
            if (error != std::errc() || end != text.data() + text.size() || magnitude > limit)
                return fmt::format("{} is {} {}", shown, negative ? "below" : "above", negative ? min : max);
            const long long v = negative ? static_cast<long long>(0ull - magnitude) : static_cast<long long>(magnitude);
            if (v < min) return fmt::format("{} is below {}", shown, min);
            if (v > max) return fmt::format("{} is above {}", shown, max);
            text = std::to_string(v);
            return {};
        },
        max >= std::numeric_limits<int>::max() ? fmt::format("INT >= {}", min) : fmt::format("INT in [{}, {}]", min, max));
}
inline CLI::Validator count_at_least(long long min) { return count_in(min, std::numeric_limits<int>::max()); }
// --seed: a count from 0 (CLI11 read -1 and 2^64 as 18446744073709551615, 0x10 as 16, "" as 0)
inline CLI::Validator seed_value() { return count_in(0, std::numeric_limits<long long>::max()); }

inline CLI::Validator positive_finite() { return finite_range(0, std::numeric_limits<double>::max(), true); }

// --threads N (1..256), with the same meaning in every program.
inline CLI::Option* add_threads_option(CLI::App& app, int& threads) {
    return app
        .add_option("--threads", threads,
                    "threads for the matrix products (oneDNN or OpenBLAS) and for xtgrad's own kernels (attention products, Adam), the caller included")
        ->capture_default_str()
        ->transform(cli::count_in(1, 256));
}

inline void apply_threads(int threads) {
    set_blas_threads(threads);
    set_num_threads(threads);
}

inline std::string program_name(const CLI::App& app) {
    return app.get_name().empty() ? std::string("xtgrad") : app.get_name();
}

// A user's path or name in a line of output ("wrote PATH"): an escape code or a stray byte in
// --out is shown as \xHH, not sent to the terminal (as error messages show them).
inline std::string shown(std::string_view text) { return escaped_for_message(text, /*keep_newlines=*/false); }

// "PROGRAM: message" (and, for a usage error, the pointer to --help), the message's bytes as a
// terminal can show them: it may quote the command line or a path (autograd/utf8_text.hpp).
inline std::string error_message(const CLI::App& app, std::string_view message, bool usage, bool one_line = false) {
    return fmt::format("{}: {}\n{}", program_name(app), escaped_for_message(message, !one_line),
                       usage ? "Run with --help for more information.\n" : "");
}
inline void print_error(const CLI::App& app, std::string_view message, bool usage, bool one_line = false) {
    std::fputs(error_message(app, message, usage, one_line).c_str(), stderr);
}

// What is wrong with an option written `--name=VALUE`, or "": a flag given a value (CLI11 said
// "list-switches was given a disallowed flag override"), or an option with nothing after '='
// (CLI11 took the next argument as its value: `winter_games --out= --help` trained into a folder
// named --help). Arguments after `--` are not options.
inline std::string written_wrong(CLI::App& app, int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--") break;
        const std::size_t eq = arg.find('=');
        if (arg.rfind("--", 0) != 0 || eq == std::string::npos) continue;
        const std::string name = arg.substr(0, eq);
        const CLI::Option* o = app.get_option_no_throw(name);
        if (o == nullptr) continue;  // unknown: CLI11 names it
        const std::string shown = arg.size() > 60 ? arg.substr(0, 60) + "..." : arg;
        if (o->get_expected_max() == 0) return fmt::format("{} takes no value (got '{}')", name, shown);
        if (eq + 1 == arg.size()) return fmt::format("{} has no value after '=' (write {}=VALUE or {} VALUE)", name, name, name);
    }
    return {};
}

// Parses, then checks the environment's settings that can be wrong (autograd/environment.hpp:
// the switches, XTGRAD_ISA, the break filter) before any work starts; returns the exit status to
// leave with (0 after --help, 2 on a bad option or setting, its message printed), or nothing to
// go on. run_main calls it (every program goes through run_main).
inline std::optional<int> parse_or_exit(CLI::App& app, int argc, char** argv) {
    if (app.get_footer().empty()) app.footer(cli_footer());
    // CLI11's own errors quote the command line as given (`--config $'\xff'`): as every other message
    // (one line: CLI11 writes its messages so; a newline in them is the value's: `--epochs $'1\n'`)
    app.failure_message([](const CLI::App* a, const CLI::Error& e) { return error_message(*a, e.what(), true, true); });
    // An option given twice: the last one counts (`$base --lr 1e30` overrides $base's --lr).
    for (CLI::Option* o : app.get_options())
        if (o->get_expected_max() <= 1) o->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    // A flag takes no value: CLI11 read `--list-switches=0` as the flag off and `--adam=2` as given twice
    if (const std::string wrong = written_wrong(app, argc, argv); !wrong.empty()) {
        print_error(app, wrong, true, /*one_line=*/true);  // it quotes the argument
        return kUsageError;
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // CLI11 checks the required arguments before the unknown ones: `report_compare --no-such`
        // said "reports is required"; the option nobody knows is the mistake to name
        if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && !app.remaining().empty()) {
            std::string extras;
            for (const std::string& arg : app.remaining()) extras += (extras.empty() ? "" : " ") + arg;
            print_error(app, "The following arguments were not expected: " + extras, true, true);
            return kUsageError;
        }
        if (app.exit(e) != 0) return kUsageError;
        // --help went to std::cout: a write that failed (a full disk, a closed pipe) is no success
        if (!std::cout.flush()) {
            print_error(app, "could not write the help to the standard output", false);
            return kRuntimeError;
        }
        return kSuccess;
    }
    try {
        xtgrad::check_environment();
    } catch (const Error& e) {
        print_error(app, e.what(), true);
        return kUsageError;
    }
    return std::nullopt;
}

// Parses the command line and runs body() (which returns the exit status), mapping every
// failure to the convention: CLI11's errors and UsageError -> 2 with the message and a
// pointer to --help; xtgrad::Error and any other exception -> 1 with "PROGRAM: message". What
// the program printed is its result (a table, a log a script reads): output it could not write
// (a full device, a closed stdout) turns a success into 1, as --help's does.
template <typename Body>
int run_main(CLI::App& app, int argc, char** argv, Body&& body) noexcept {
    try {
        if (std::optional<int> status = parse_or_exit(app, argc, argv)) return *status;  // --help: 0
        const int status = body();
        if (status == kSuccess && (std::fflush(stdout) != 0 || std::ferror(stdout))) {  // a failure said its own
            print_error(app, "could not write its output to the standard output", false);
            return kRuntimeError;
        }
        return status;
    } catch (const UsageError& e) {
        print_error(app, e.what(), true);
        return kUsageError;
    } catch (const std::exception& e) {
        // fmt::print throws "cannot write to file" where stdout is full: say which output it was
        if (std::ferror(stdout))
            print_error(app, fmt::format("could not write its output to the standard output ({})", e.what()), false);
        else
            print_error(app, e.what(), false);
        return kRuntimeError;
    } catch (...) {
        print_error(app, "unknown error", false);
        return kRuntimeError;
    }
}

}  // namespace xtgrad::cli
