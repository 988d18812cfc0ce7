// parity: check xtgrad against PyTorch fixtures (docs/fixtures.md).
//   parity DIR            one case folder: every tensor's max abs/rel error, exit 1 beyond tolerance
//   parity --all ROOT     every case folder under ROOT; ends with "N passed, M failed"
//   parity --list         the module ids this build can check
#include <xtgrad/autograd/error.hpp>
#include "examples/common/cli.hpp"
#include "tools/parity/fixture.hpp"

#include <cstdio>
#include <filesystem>
#include <string>

using namespace xtgrad;
using namespace xtgrad::parity;

namespace {

// PASS or FAIL and the case on stdout (names and paths as a terminal can show them)
bool print_outcome(const Outcome& o, const std::string& dir, bool details) {
    // the case's name; in a suite (--all) also its folder where that is named otherwise (a copied or
    // edited case), while one DIR is the folder the command line gave
    const bool named_as_folder =
        details || (!o.case_name.empty() && std::filesystem::path(dir).filename() == o.case_name);
    const std::string name = o.case_name.empty() ? cli::shown(dir)
                             : named_as_folder    ? cli::shown(o.case_name)
                                                  : cli::shown(o.case_name) + " in " + cli::shown(dir);
    std::printf("%s %s (%s)\n", o.passed() ? "PASS" : "FAIL", name.c_str(), cli::shown(o.module).c_str());
    if (!o.supported && o.error.empty())
        std::printf("  no runner for module '%s'\n", cli::shown(o.module).c_str());
    if (!o.error.empty()) std::printf("  error: %s\n", escaped_for_message(o.error).c_str());
    if (details || !o.passed()) std::fputs(o.report.summary().c_str(), stdout);
    return o.passed();
}

}  // namespace

int main(int argc, char** argv) {
    std::string dir, all;
    bool list = false, quiet = false;
    int threads = 1;
    CLI::App app{"Check xtgrad against PyTorch fixtures (a case folder: .npy files + meta.json, written by "
                 "tools/make_fixtures.py; docs/fixtures.md). Exit 1 when a tensor is beyond tolerance.",
                 "parity"};
    app.add_option("DIR", dir, "one case folder: prints every tensor's max abs/rel error");
    app.add_option("--all", all, "every case folder under this suite folder; ends with \"N passed, M failed\"");
    app.add_flag("--list", list, "print the module ids this build can check");
    app.add_flag("--quiet", quiet, "with --all: print only the failures and the total");
    cli::add_threads_option(app, threads);
    return cli::run_main(app, argc, argv, [&] {
        if (list + !dir.empty() + !all.empty() != 1) cli::usage_error("give exactly one of DIR, --all ROOT and --list");
        cli::apply_threads(threads);
        if (list) {
            for (const std::string& m : registered_modules()) std::printf("%s\n", m.c_str());
            return cli::kSuccess;
        }
        if (!all.empty()) {
            std::size_t passed = 0, failed = 0;
            for (const std::string& d : case_dirs(all)) {
                const Outcome o = run_fixture(d);
                if (!quiet || !o.passed()) print_outcome(o, d, false);
                std::fflush(stdout);  // each case's line out before the next case runs
                (o.passed() ? passed : failed) += 1;
            }
            std::printf("%zu passed, %zu failed\n", passed, failed);
            // the exit status's reason on stderr too, where a script's log keeps it
            if (passed + failed == 0) fail("no case folder (with a meta.json) under '{}'", all);
            if (failed > 0) fail("{} of {} cases failed (FAIL above)", failed, passed + failed);
            return cli::kSuccess;
        }
        const Outcome o = run_fixture(dir);
        // run_main names the program: a runner's "parity: ..." is not said twice
        const std::string said = o.error.rfind("parity: ", 0) == 0 ? o.error.substr(8) : o.error;
        if (print_outcome(o, dir, true)) return cli::kSuccess;
        if (!said.empty()) fail("{}", said);
        if (!o.supported) fail("{}: no runner for module '{}' (--list names them)", dir, cli::shown(o.module));
        if (o.report.rows().empty()) fail("{}: nothing was compared", dir);
        fail("{}: beyond tolerance (above)", dir);
    });
}
