// Every module against PyTorch: each committed fixture under tests/fixtures/small (written
// by tools/make_fixtures.py) is run through the same runners as the `parity` tool.
#include "tools/parity/fixture.hpp"

#include <doctest/doctest.h>

TEST_SUITE_BEGIN("nn");

using namespace xtgrad::parity;

TEST_CASE("parity with PyTorch on the committed fixtures") {
    const std::vector<std::string> dirs = case_dirs(XTGRAD_FIXTURE_DIR "/small");
    REQUIRE(dirs.size() >= 81);
    for (const std::string& dir : dirs) {
        const Outcome o = run_fixture(dir);
        INFO(o.case_name, " (", o.module, ")\n", o.error, "\n", o.report.summary());
        CHECK_MESSAGE(o.supported, "no runner for module ", o.module);
        if (o.supported) CHECK(o.passed());
    }
}

TEST_SUITE_END();
