// What a moved page costs at its next touch (autograd/page_moves.hpp), which decides the block
// cache's defaults on this machine.
#include <xtgrad/autograd/page_moves.hpp>
#include <xtgrad/autograd/speed_switches.hpp>
#include <xtgrad/autograd/array_allocator.hpp>

#include <doctest/doctest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <limits>

TEST_SUITE_BEGIN("memory");

using namespace xtgrad;

TEST_CASE("the page-move probe measures a fresh and a moved page, both finite and positive") {
    const memory::PageMoveCost c = memory::measure_page_moves(16, 2);
    REQUIRE(c.measured);
    CHECK(std::isfinite(c.moved_us));
    CHECK(std::isfinite(c.fresh_us));
    CHECK(c.moved_us > 0);
    CHECK(c.fresh_us > 0);
    // a moved page's first touch is never dearer than a new page's fault by much: the guest's
    // fault plus the host's, where moves are dear, is still a fault (PVM: ~11 us against ~5)
    CHECK(c.moved_us < 10 * c.fresh_us + 1);
}

TEST_CASE("the page-move probe of no pages, no tries or more pages than memory measures nothing and says so") {
    CHECK_FALSE(memory::measure_page_moves(0, 3).measured);
    CHECK_FALSE(memory::measure_page_moves(16, 0).measured);
    CHECK_FALSE(memory::measure_page_moves(16, -1).measured);
    CHECK_FALSE(memory::measure_page_moves(std::numeric_limits<std::size_t>::max(), 1).measured);  // bytes overflow
    CHECK_FALSE(memory::measure_page_moves(std::size_t{1} << 40, 1).measured);  // 4 PiB: no mapping that large
}

TEST_CASE("where pages cannot be mapped the probe measures nothing, so the block cache's default is off") {
    // In a child: the address space capped at what it holds now, every mapping refused.
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        const rlimit none{0, 0};
        ::setrlimit(RLIMIT_AS, &none);
        const memory::PageMoveCost c = memory::measure_page_moves(64, 3);
        ::_exit(c.measured ? 1 : 0);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("the process measures once; the block cache defaults to on exactly where moves are cheap") {
    const memory::PageMoveCost& first = memory::page_move_cost();
    CHECK(&first == &memory::page_move_cost());
    CHECK(first.measured);
    const bool cheap = first.moved_us < memory::kCheapMoveMicroseconds;
    CHECK(memory::page_moves_cheap() == cheap);
    CHECK(detail::kBlockCacheSwitch.unset_means() == cheap);
    CHECK(detail::kBlockCacheCutSwitch.unset_means());  // the cut, where the cache runs: on either way
    CHECK(memory::block_cache_default_on() == cheap);
}

TEST_SUITE_END();
