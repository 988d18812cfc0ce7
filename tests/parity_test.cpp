// Every module against PyTorch: each committed fixture under tests/fixtures/small (written
// by tools/make_fixtures.py) is run through the same runners as the `parity` tool.
#include <xtgrad/nn/attention.hpp>
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

// The fixtures are small, so scaled_dot_product_attention composes separate ops on them (below
// nn::kFusedMinScores); forced, the fused attention ops pass the same fixtures (rng's: the dropout
// masks inside them equal torch's).
TEST_CASE("parity with PyTorch on the committed fixtures, the attention fused at every size") {
    xtgrad::nn::set_attention_fusion(xtgrad::nn::AttentionFusion::fused);
    for (const char* set : {"/small", "/rng"})
        for (const std::string& dir : case_dirs(std::string(XTGRAD_FIXTURE_DIR) + set)) {
            const Outcome o = run_fixture(dir);
            INFO(o.case_name, " (", o.module, ")\n", o.error, "\n", o.report.summary());
            if (o.supported) CHECK(o.passed());
        }
    xtgrad::nn::set_attention_fusion(xtgrad::nn::AttentionFusion::automatic);
}

TEST_SUITE_END();
