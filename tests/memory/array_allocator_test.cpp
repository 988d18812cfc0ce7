// Array's allocator (autograd/array_allocator.hpp): 64-byte blocks, large ones kept for reuse.
#include <xtgrad/autograd/array_allocator.hpp>
#include "../test_util.hpp"

#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

TEST_SUITE_BEGIN("memory");

using namespace xtgrad;

namespace {
bool aligned_64(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % memory::kAlignment == 0; }

// The block cache is on unless this is an AddressSanitizer build or XTGRAD_BLOCK_CACHE=0.
bool block_cache_expected() {
#if defined(__SANITIZE_ADDRESS__)
    return false;
#else
    const char* env = std::getenv("XTGRAD_BLOCK_CACHE");
    return env == nullptr || std::strcmp(env, "0") != 0;
#endif
}
}  // namespace

TEST_CASE("every array's block is 64-byte aligned, from the heap and from the block cache") {
    for (std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{1000}, std::size_t{300'000}, std::size_t{5'000'000}}) {
        CAPTURE(n);
        const Array a = empty_array({n});
        const Ids ids = Ids::from_shape({n});
        const Mask mask = Mask::from_shape({n});
        CHECK(aligned_64(a.data()));
        CHECK(aligned_64(ids.data()));
        CHECK(aligned_64(mask.data()));
    }
    ArrayAllocator<float> alloc;
    float* empty = alloc.allocate(0);  // a valid, distinct pointer, as operator new gives
    CHECK(empty != nullptr);
    alloc.deallocate(empty, 0);
    CHECK_THROWS_AS((void)alloc.allocate(static_cast<std::size_t>(-1) / 2), std::bad_array_new_length);
}

TEST_CASE("a freed large block serves the next request of about its size, and the cache can be emptied") {
    memory::release_cached_blocks();
    const memory::BlockCacheStats s0 = memory::block_cache_stats();
    REQUIRE(s0.enabled == block_cache_expected());
    if (!s0.enabled) {  // every block from the heap: nothing is counted or kept
        { const Array big = empty_array({1 << 20}); }
        CHECK(memory::block_cache_stats().cached_bytes == 0);
        CHECK(memory::block_cache_stats().live_bytes == 0);
        return;
    }
    CHECK(s0.cached_bytes == 0);
    const float* first = nullptr;
    {
        Array a = empty_array({1 << 20});  // 4 MiB
        first = a.data();
        a.fill(1.f);
        CHECK(memory::block_cache_stats().live_bytes >= s0.live_bytes + (4u << 20));
        CHECK(memory::block_cache_stats().peak_live_bytes >= memory::block_cache_stats().live_bytes);
    }
    const memory::BlockCacheStats s1 = memory::block_cache_stats();
    // one mapping: the 4 MiB and a page, so that blocks can start at different offsets in a page
    CHECK(s1.cached_bytes == (4u << 20) + 4096);
    CHECK(s1.cached_blocks == 1);
    {
        const Array b = empty_array({(1 << 20) - 4096});  // 16 KiB less: within 1/8, the same mapping
        const std::ptrdiff_t apart = reinterpret_cast<const char*>(b.data()) - reinterpret_cast<const char*>(first);
        CHECK(apart != 0);  // at another offset within its first page
        CHECK(std::abs(apart) < 4096);
        CHECK(memory::block_cache_stats().reused == s1.reused + 1);
        CHECK(memory::block_cache_stats().cached_bytes == 0);
    }
    CHECK(memory::block_cache_stats().cached_bytes == (4u << 20) + 4096);
    memory::release_cached_blocks();
    CHECK(memory::block_cache_stats().cached_bytes == 0);
    CHECK(memory::block_cache_stats().cached_blocks == 0);
}

TEST_CASE("of several cached blocks of one size, the one freed last serves the next request") {
    memory::release_cached_blocks();
    if (!memory::block_cache_stats().enabled) return;  // ASan or XTGRAD_BLOCK_CACHE=0: the heap's choice
    const std::size_t n = 1 << 19;  // 2 MiB each
    std::optional<Array> a(empty_array({n})), b(empty_array({n})), c(empty_array({n}));
    const float* freed_last = a->data();
    b.reset(), c.reset(), a.reset();  // freed in the order b, c, a
    const memory::BlockCacheStats before = memory::block_cache_stats();
    CHECK(before.cached_blocks == 3);
    const Array next = empty_array({n});
    CHECK(memory::block_cache_stats().reused == before.reused + 1);
    // a's mapping, at another offset within its first page
    const std::ptrdiff_t apart = reinterpret_cast<const char*>(next.data()) - reinterpret_cast<const char*>(freed_last);
    CHECK(std::abs(apart) < 4096);
    memory::release_cached_blocks();
}

TEST_CASE("blocks from the cache hold what is written to them, across reuse and resizing") {
    // Sizes far apart (no reuse as is), many times: whatever the cache does with them (a new
    // mapping or a cached block resized in place), each array keeps its own values.
    for (int round = 0; round < 3; ++round) {
        Array small = empty_array({300'000});  // 1.1 MiB
        Array big = empty_array({3'000'000});  // 11.4 MiB
        small.fill(static_cast<float>(round));
        big.fill(static_cast<float>(round + 10));
        Array middle = empty_array({1'000'000});
        middle.fill(-1.f);
        CHECK(small(123) == static_cast<float>(round));
        CHECK(small(299'999) == static_cast<float>(round));
        CHECK(big(0) == static_cast<float>(round + 10));
        CHECK(big(2'999'999) == static_cast<float>(round + 10));
        CHECK(middle(999'999) == -1.f);
    }
    const memory::BlockCacheStats s = memory::block_cache_stats();
    CHECK(s.live_bytes <= s.peak_live_bytes);
}

TEST_CASE("successive large blocks start at different offsets within a page (no 4K aliasing)") {
    if (!memory::block_cache_stats().enabled) {  // heap blocks: glibc's offsets
        CHECK_FALSE(block_cache_expected());
        return;
    }
    std::vector<Array> arrays;
    std::vector<std::uintptr_t> offsets;
    for (int i = 0; i < 8; ++i) {
        arrays.push_back(empty_array({300'000}));
        offsets.push_back(reinterpret_cast<std::uintptr_t>(arrays.back().data()) % 4096);
    }
    for (std::size_t i = 1; i < offsets.size(); ++i) CHECK(offsets[i] != offsets[i - 1]);
}

TEST_SUITE_END();
