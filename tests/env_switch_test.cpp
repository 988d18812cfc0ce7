// The on/off environment switches (autograd/env_switch.hpp): 1, 0, unset or empty, else an Error
// naming the variable, the value and what 1 and 0 do. A test variable of its own: the library's
// switches are read once per process.
#include "test_util.hpp"
#include "under_asan.hpp"

#include <xtgrad/autograd/malloc_tuning.hpp>
#include <xtgrad/autograd/speed_switches.hpp>
#include <xtgrad/autograd/environment.hpp>
#include <xtgrad/simd/cpu_isa.hpp>
#include <xtgrad/threads/parallel.hpp>

#include <algorithm>

#include <malloc.h>

#include <cstdlib>
#include <string>
#include <vector>

using namespace xtgrad;

TEST_SUITE_BEGIN("environment");

namespace {
// One variable, two defaults: the same switch as one off by default and as one on by default
constexpr detail::EnvSwitch kTestSwitch{"XTGRAD_TEST_SWITCH", "do it", "do not", detail::always_off};
constexpr detail::EnvSwitch kTestSwitchOn{"XTGRAD_TEST_SWITCH", "do it", "do not", detail::always_on};

struct TestVariable {
    explicit TestVariable(const char* value) {
        if (value) REQUIRE(::setenv(kTestSwitch.name, value, 1) == 0);
        else REQUIRE(::unsetenv(kTestSwitch.name) == 0);
    }
    ~TestVariable() { ::unsetenv(kTestSwitch.name); }
};
}  // namespace

TEST_CASE("an on/off switch: 1 on, 0 off, unset or empty the default") {
    {
        TestVariable v("1");
        CHECK(detail::switch_value(kTestSwitch) == detail::SwitchValue::on);
        CHECK(detail::read_switch(kTestSwitch));
    }
    {
        TestVariable v("0");
        CHECK(detail::switch_value(kTestSwitch) == detail::SwitchValue::off);
        CHECK_FALSE(detail::read_switch(kTestSwitchOn));
    }
    for (const char* unset : {static_cast<const char*>(nullptr), ""}) {
        TestVariable v(unset);
        CHECK(detail::switch_value(kTestSwitch) == detail::SwitchValue::unset);
        CHECK(detail::read_switch(kTestSwitchOn));
        CHECK_FALSE(detail::read_switch(kTestSwitch));
    }
}

TEST_CASE("any other value is an Error naming the variable, the value and what 1 and 0 do") {
    // "false" and "off" used to turn XTGRAD_TRACE and XTGRAD_GEMM_PROFILE on
    for (const char* value : {"false", "off", "yes", "true", "2", "-1", " 1", "1 ", "01"}) {
        CAPTURE(value);
        TestVariable v(value);
        CHECK(detail::switch_value(kTestSwitch) == detail::SwitchValue::invalid);
        CHECK_THROWS_WITH_AS(detail::read_switch(kTestSwitch),
                             (std::string("XTGRAD_TEST_SWITCH: '") + value + "' is neither 1 (do it) nor 0 (do not)").c_str(),
                             Error);
    }
    {
        TestVariable bytes("1\n\xff\xfe\t\x7f");  // a newline, non-UTF-8 bytes, controls: escaped
        CHECK_THROWS_WITH_AS(detail::read_switch(kTestSwitch),
                             "XTGRAD_TEST_SWITCH: '1\\x0a\\xff\\xfe\\x09\\x7f' is neither 1 (do it) nor 0 (do not)", Error);
    }
    {
        TestVariable text("\\x01");  // the four characters \x01, not the byte: the backslash escaped too
        CHECK_THROWS_WITH_AS(detail::read_switch(kTestSwitch),
                             "XTGRAD_TEST_SWITCH: '\\x5cx01' is neither 1 (do it) nor 0 (do not)", Error);
    }
    TestVariable v(std::string(100, 'x').c_str());  // the value is cut at 40 characters, and says so
    CHECK_THROWS_WITH_AS(detail::read_switch(kTestSwitch),
                         ("XTGRAD_TEST_SWITCH: '" + std::string(40, 'x') + "... (100 bytes)' is neither 1 (do it) nor 0 (do not)").c_str(),
                         Error);
}

TEST_CASE("XTGRAD_ISA: a bad value is an Error quoting at most 40 characters of it") {
    CHECK(detail::isa_from_env("baseline") == Isa::baseline);
    CHECK(detail::isa_from_env("") == detail::isa_from_env(nullptr));
    CHECK_THROWS_WITH_AS(detail::isa_from_env("avx3"), "XTGRAD_ISA=avx3: expected baseline or avx512", Error);
    const std::string huge(100000, 'x');  // the whole value used to be quoted
    CHECK_THROWS_WITH_AS(detail::isa_from_env(huge.c_str()),
                         ("XTGRAD_ISA=" + std::string(40, 'x') + "... (100000 bytes): expected baseline or avx512").c_str(), Error);
}

TEST_CASE("the speed switches: check_environment refuses a bad value of each, naming it") {
    for (const detail::EnvSwitch* sw : detail::kSpeedSwitches) {
        CAPTURE(sw->name);
        REQUIRE(::setenv(sw->name, "on", 1) == 0);
        if (sw == &detail::kMallocNoFastbinsSwitch)  // read when the library loaded: a value set later is not read
            CHECK_NOTHROW(check_environment());
        else
            CHECK_THROWS_WITH_AS(check_environment(), (std::string(sw->name) + ": 'on' is neither 1 (" + sw->on +
                                                       ") nor 0 (" + sw->off + ")").c_str(), Error);
        ::unsetenv(sw->name);
    }
    CHECK_NOTHROW(check_environment());
}

TEST_CASE("XTGRAD_POOL_SPIN: a bad value refuses set_num_threads and keeps the pool; 0 runs jobs alike") {
    const int before = num_threads();
    REQUIRE(::setenv("XTGRAD_POOL_SPIN", "yes", 1) == 0);
    CHECK_THROWS_WITH_AS(set_num_threads(before == 2 ? 3 : 2), doctest::Contains("XTGRAD_POOL_SPIN: 'yes'"), Error);
    CHECK(num_threads() == before);
    REQUIRE(::setenv("XTGRAD_POOL_SPIN", "0", 1) == 0);
    set_num_threads(before == 2 ? 3 : 2);
    std::vector<int> hits(1000, 0);
    parallel_for(hits.size(), 1, [&](std::size_t b, std::size_t e) { for (std::size_t i = b; i < e; ++i) hits[i] += 1; });
    CHECK(std::count(hits.begin(), hits.end(), 1) == 1000);
    ::unsetenv("XTGRAD_POOL_SPIN");
    set_num_threads(before);
    CHECK(num_threads() == before);
}

TEST_CASE("set_speed_switch flips a switch in the running process; the block cache's two and malloc's are refused, unchanged") {
    for (const detail::EnvSwitch* sw : detail::kSpeedSwitches) {
        CAPTURE(sw->name);
        CHECK(detail::speed_switch_named(sw->name) == sw);
        if (!detail::speed_switch_settable(*sw)) continue;
        const bool before = detail::speed_switch_on(*sw);
        detail::set_speed_switch(*sw, !before);
        CHECK(detail::speed_switch_on(*sw) == !before);
        detail::set_speed_switch(*sw, before);
        CHECK(detail::speed_switch_on(*sw) == before);
    }
    CHECK(detail::speed_switch_named("XTGRAD_NO_SUCH_SWITCH") == nullptr);
    CHECK(detail::speed_switch_named("") == nullptr);
    for (const detail::EnvSwitch* sw :
         {&detail::kBlockCacheSwitch, &detail::kBlockCacheCutSwitch, &detail::kMallocNoFastbinsSwitch}) {
        CAPTURE(sw->name);
        CHECK_FALSE(detail::speed_switch_settable(*sw));
        const bool before = detail::speed_switch_on(*sw);
        const std::string says = std::string(sw->name) + ": fixed when the process starts";
        CHECK_THROWS_WITH_AS(detail::set_speed_switch(*sw, !before), doctest::Contains(says.c_str()), Error);
        CHECK(detail::speed_switch_on(*sw) == before);
    }
    // by address: a switch that is no entry of kSpeedSwitches, or a copy of one, is not settable
    const detail::EnvSwitch copy = detail::kSmallGemmSwitch;
    CHECK_FALSE(detail::speed_switch_settable(kTestSwitch));
    CHECK_FALSE(detail::speed_switch_settable(detail::kTraceSwitch));
    CHECK_FALSE(detail::speed_switch_settable(copy));
    CHECK_THROWS_WITH_AS(detail::set_speed_switch(copy, true), doctest::Contains("not a speed switch"), Error);
    CHECK_THROWS_WITH_AS(detail::set_speed_switch(kTestSwitch, true),
                         "XTGRAD_TEST_SWITCH: not a speed switch (autograd/speed_switches.hpp lists them)", Error);
}

TEST_CASE("speed_switch_tags: what measuring a switch needs, in --list-switches' words") {
    CHECK(detail::speed_switch_tags(detail::kSmallGemmSwitch) == "");
    CHECK(detail::speed_switch_tags(detail::kBlockCacheSwitch) == "fixed");
    CHECK(detail::speed_switch_tags(detail::kBlockCacheCutSwitch) == "fixed,block-cache");
    CHECK(detail::speed_switch_tags(detail::kPoolSpinSwitch) == "workers");
    CHECK(detail::speed_switch_tags(detail::kAdamPrefetchSwitch) == "one-thread,optimizer");
    CHECK(detail::speed_switch_tags(detail::kInferenceWeightsPackedSwitch) == "autocast,inference");
    CHECK(detail::speed_switch_tags(detail::kSmallGemmAmxSwitch) == "autocast");
    CHECK(detail::speed_switch_tags(detail::kGradientAsFactorsSwitch) == "optimizer,in-backward");
    CHECK(detail::speed_switch_tags(detail::kMallocNoFastbinsSwitch) == "fixed");
    // a switch that is no speed switch is not settable: "fixed"
    CHECK(detail::speed_switch_tags(detail::kTraceSwitch) == "fixed");
}

TEST_CASE("XTGRAD_MALLOC_NO_FASTBINS: small blocks freed past tcache wait in glibc's fastbins only where it is off") {
    // as the library set it when it loaded, whatever the environment says now
    const bool no_fastbins = detail::malloc_fastbins_off();
    REQUIRE(::setenv(detail::kMallocNoFastbinsSwitch.name, no_fastbins ? "0" : "1", 1) == 0);
    CHECK(detail::speed_switch_on(detail::kMallocNoFastbinsSwitch) == no_fastbins);
    CHECK_NOTHROW(detail::check_malloc_tuning());
    ::unsetenv(detail::kMallocNoFastbinsSwitch.name);
    // a bad value read at load is quoted as it was then (fail_invalid_switch's two-argument form)
    CHECK_THROWS_WITH_AS(detail::fail_invalid_switch(detail::kMallocNoFastbinsSwitch, "yes"),
                         doctest::Contains("XTGRAD_MALLOC_NO_FASTBINS: 'yes' is neither 1 ("), Error);
    CHECK_THROWS_WITH_AS(detail::set_speed_switch(detail::kMallocNoFastbinsSwitch, true),
                         doctest::Contains("malloc is set up when the library loads"), Error);
#if XTGRAD_UNDER_ASAN || !defined(__GLIBC__)
    MESSAGE("no glibc malloc here (AddressSanitizer's own, or another C library): its bins are not read");
#else
    // 64 blocks of one small size, freed: tcache keeps 7 per size, the rest go to the fastbins if any
    std::vector<void*> blocks(64);
    for (void*& b : blocks) b = std::malloc(48);
    for (void* b : blocks) std::free(b);
    CHECK((::mallinfo2().fsmblks > 0) == !no_fastbins);
#endif
}

TEST_CASE("check_environment passes in the test's own environment") {
    CHECK_NOTHROW(check_environment());
}

TEST_SUITE_END();
