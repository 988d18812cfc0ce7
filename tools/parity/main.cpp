// parity: check xtgrad against PyTorch fixtures (../shared/parity/FORMAT.md).
//   parity DIR            one case folder: every tensor's max abs/rel error, exit 1 beyond tolerance
//   parity --all ROOT     every case folder under ROOT; ends with "N passed, M failed"
//   parity --list         the module ids this build can check
#include "autograd/error.hpp"
#include "tools/parity/fixture.hpp"

#include <cstdio>
#include <cstring>
#include <string>

using namespace xtgrad::parity;

namespace {

int usage() {
    std::fprintf(stderr,
                 "usage: parity DIR | parity --all ROOT [--quiet] | parity --list\n"
                 "  DIR   a fixture folder written by export_fixture.py or tools/make_fixtures.py\n"
                 "  ROOT  a suite folder holding case folders\n");
    return 2;
}

bool report(const Outcome& o, const std::string& dir, bool details) {
    const char* verdict = o.passed() ? "PASS" : (o.supported ? "FAIL" : "FAIL");
    std::printf("%s %s (%s)\n", verdict, o.case_name.empty() ? dir.c_str() : o.case_name.c_str(), o.module.c_str());
    if (!o.supported && o.error.empty()) std::printf("  no runner for module '%s'\n", o.module.c_str());
    if (!o.error.empty()) std::printf("  error: %s\n", o.error.c_str());
    if (details || !o.passed()) std::fputs(o.report.summary().c_str(), stdout);
    return o.passed();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) return usage();
    try {
        if (std::strcmp(argv[1], "--list") == 0) {
            for (const std::string& m : registered_modules()) std::printf("%s\n", m.c_str());
            return 0;
        }
        if (std::strcmp(argv[1], "--all") == 0) {
            if (argc < 3) return usage();
            const bool quiet = argc > 3 && std::strcmp(argv[3], "--quiet") == 0;
            std::size_t passed = 0, failed = 0;
            for (const std::string& dir : case_dirs(argv[2])) {
                const Outcome o = run_fixture(dir);
                if (!quiet || !o.passed()) report(o, dir, false);
                (o.passed() ? passed : failed) += 1;
            }
            std::printf("%zu passed, %zu failed\n", passed, failed);
            return failed == 0 && passed > 0 ? 0 : 1;
        }
        const std::string dir = argv[1];
        return report(run_fixture(dir), dir, true) ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "parity: %s\n", e.what());
        return 2;
    }
}
