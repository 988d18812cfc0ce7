// Array's allocator (autograd/array_allocator.hpp): 64-byte blocks, large ones kept for reuse.
#include <xtgrad/autograd/array_allocator.hpp>
#include "../test_util.hpp"
#include "../under_asan.hpp"

#include <doctest/doctest.h>

#include <algorithm>
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

// The block cache is off in an AddressSanitizer build; elsewhere XTGRAD_BLOCK_CACHE=1 or 0 says,
// and unset this machine's default does (on where page moves are cheap: autograd/page_moves.hpp).
// tools/test.sh runs the suite both ways on every machine.
bool block_cache_expected() {
#if XTGRAD_UNDER_ASAN
    return false;
#else
    const char* env = std::getenv("XTGRAD_BLOCK_CACHE");
    if (env == nullptr || *env == '\0') return memory::block_cache_default_on();
    return std::strcmp(env, "0") != 0;
#endif
}
}  // namespace

TEST_CASE("a request larger than a process can address is an Error naming its size, not std::bad_alloc") {
    // before any rounding could wrap the size (SIZE_MAX rounded up to 64 bytes is 0)
    for (std::size_t bytes : {memory::kMaxArrayBytes + 1, SIZE_MAX - 10, SIZE_MAX})
        test::expect_error([&] { memory::allocate(bytes); }, {"out of memory", "could not be allocated"});
    test::expect_error([] { xtgrad::Array::from_shape({(std::size_t{1} << 45) + 1}); }, {"out of memory", "GiB"});
}

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

namespace {
// A fixed budget for the block cache while in scope: the live and cached bytes now plus `extra`;
// past it the cache cuts and joins (cut 1) or maps new pages (cut 0), whatever
// XTGRAD_BLOCK_CACHE_CUT says.
class FixedBudget {
public:
    explicit FixedBudget(std::size_t extra, int cut = 1) {
        const memory::BlockCacheStats s = memory::block_cache_stats();
        memory::detail::set_block_cache_budget(s.live_bytes + s.cached_bytes + extra);
        memory::detail::set_block_cache_cut(cut);
    }
    ~FixedBudget() {
        memory::detail::set_block_cache_budget(0);
        memory::detail::fail_block_moves_after(-1);
        memory::detail::set_block_cache_cut(-1);
    }
    FixedBudget(const FixedBudget&) = delete;
    FixedBudget& operator=(const FixedBudget&) = delete;
};

constexpr std::size_t kMiB = 1 << 20, kPageBytes = 4096, kFloatsPerMiB = kMiB / sizeof(float);

// Three cached blocks of 2 MiB and a page, freed in the order a, b, c, holding 1, 2 and 3.
void cache_three_blocks() {
    std::optional<Array> a(empty_array({2 * kFloatsPerMiB})), b(empty_array({2 * kFloatsPerMiB})),
        c(empty_array({2 * kFloatsPerMiB}));
    a->fill(1.f), b->fill(2.f), c->fill(3.f);
    a.reset(), b.reset(), c.reset();
}

// How many elements of a hold each of the values 0 (a new page's), 1, 2 and 3.
std::vector<std::size_t> value_counts(const Array& a) {
    std::vector<std::size_t> counts(4, 0);
    for (const float x : a)
        for (std::size_t v = 0; v < counts.size(); ++v)
            if (x == static_cast<float>(v)) ++counts[v];
    return counts;
}
}  // namespace

TEST_CASE("past its budget the cache serves a request with the head of a larger block, its tail kept") {
    memory::release_cached_blocks();
    if (!memory::block_cache_stats().enabled) return;  // ASan or XTGRAD_BLOCK_CACHE=0: the heap's choice
    {
        Array big = empty_array({8 * kFloatsPerMiB});  // 8 MiB and a page, then cached
        big.fill(1.f);
    }
    const FixedBudget budget(0);  // nothing new may be mapped
    const memory::BlockCacheStats before = memory::block_cache_stats();
    const Array head = empty_array({2 * kFloatsPerMiB});
    const memory::BlockCacheStats after = memory::block_cache_stats();
    CHECK(after.resized == before.resized + 1);
    CHECK(after.new_bytes == before.new_bytes);
    CHECK(after.cached_blocks == 1);  // the tail
    CHECK(after.cached_bytes == 6 * kMiB);
    // the big block's pages, with what they held (but the page before its array began, unwritten)
    CHECK(value_counts(head)[1] + 1024 >= head.size());
    const Array tail = empty_array({6 * kFloatsPerMiB - 1024});  // the tail serves a request as it is
    CHECK(memory::block_cache_stats().reused == after.reused + 1);
    CHECK(memory::block_cache_stats().cached_bytes == 0);
    memory::release_cached_blocks();
}

TEST_CASE("without its cut (XTGRAD_BLOCK_CACHE_CUT=0) a cache past its budget unmaps cached blocks for new pages") {
    memory::release_cached_blocks();
    if (!memory::block_cache_stats().enabled) return;  // ASan or XTGRAD_BLOCK_CACHE=0: the heap's choice
    {
        Array big = empty_array({8 * kFloatsPerMiB});  // 8 MiB and a page, then cached
        big.fill(1.f);
    }
    {
        const FixedBudget budget(0, /*cut=*/0);
        const memory::BlockCacheStats before = memory::block_cache_stats();
        const Array fresh = empty_array({2 * kFloatsPerMiB});
        const memory::BlockCacheStats after = memory::block_cache_stats();
        CHECK(after.resized == before.resized);          // nothing cut or joined
        CHECK(after.cached_blocks == 0);                 // the big block unmapped to make room
        CHECK(after.new_bytes >= before.new_bytes + 2 * kMiB);
        CHECK(value_counts(fresh)[0] == fresh.size());   // new pages: zeros, not the big block's 1s
    }
    memory::release_cached_blocks();
}

TEST_CASE("past its budget the cache joins smaller blocks' pages into one block") {
    memory::release_cached_blocks();
    if (!memory::block_cache_stats().enabled) return;
    cache_three_blocks();
    const FixedBudget budget(0);
    const memory::BlockCacheStats before = memory::block_cache_stats();
    REQUIRE(before.cached_blocks == 3);
    Array joined = empty_array({5 * kFloatsPerMiB});  // two whole blocks and the head of the third
    const memory::BlockCacheStats after = memory::block_cache_stats();
    CHECK(after.resized == before.resized + 1);
    CHECK(after.mapped == before.mapped);
    CHECK(after.new_bytes == before.new_bytes);
    CHECK(after.cached_blocks == 1);  // the third block's tail: 1 MiB and 2 pages
    CHECK(after.cached_bytes == kMiB + 2 * kPageBytes);
    // The pages moved with what they held, the block freed last first: the largest blocks go
    // first, of equal ones the newest, the smallest that closes the gap last. Zeros only where a
    // block's array left its mapping's extra page unwritten, never a whole new page's worth.
    const std::vector<std::size_t> counts = value_counts(joined);
    CHECK(counts[0] < 3 * 1024);
    CHECK(counts[0] + counts[1] + counts[2] + counts[3] == joined.size());
    CHECK(counts[1] > 0);
    CHECK(counts[2] > 0);
    CHECK(counts[3] > 0);
    CHECK(joined(1024) == 3.f);  // past the first page, which c's array may not have begun on
    CHECK(joined(5 * kFloatsPerMiB - 1) == 1.f);
    joined.fill(7.f);  // every page is writable
    CHECK(value_counts(joined)[0] == 0);
    memory::release_cached_blocks();
}

TEST_CASE("a page move the kernel refuses still gives a whole block: the rest of it newly mapped") {
    if (!memory::block_cache_stats().enabled) return;
    for (const int moves : {0, 1, 2}) {  // moves that succeed before the first refusal
        CAPTURE(moves);
        memory::release_cached_blocks();
        cache_three_blocks();
        const std::size_t live = memory::block_cache_stats().live_bytes;
        {
            const FixedBudget budget(0);
            memory::detail::fail_block_moves_after(moves);
            const memory::BlockCacheStats before = memory::block_cache_stats();
            Array joined = empty_array({6 * kFloatsPerMiB});  // all three blocks, if every move succeeded
            const memory::BlockCacheStats after = memory::block_cache_stats();
            const std::size_t unmoved = 3 - static_cast<std::size_t>(moves);
            CHECK(after.new_bytes - before.new_bytes == unmoved * (2 * kMiB + kPageBytes));
            CHECK(after.cached_blocks <= unmoved);  // the blocks not moved, unless the budget evicts them
            // c (3), then b (2) moved in; new pages (zeros) for the rest
            const std::vector<std::size_t> counts = value_counts(joined);
            CHECK((counts[3] > 0) == (moves >= 1));
            CHECK((counts[2] > 0) == (moves >= 2));
            CHECK(counts[1] == 0);
            CHECK(counts[0] + counts[2] + counts[3] == joined.size());
            joined.fill(5.f);
            CHECK(std::count(joined.begin(), joined.end(), 5.f) == static_cast<std::ptrdiff_t>(joined.size()));
        }
        CHECK(memory::block_cache_stats().live_bytes == live);
    }
    memory::release_cached_blocks();
    CHECK(memory::block_cache_stats().cached_bytes == 0);
}

TEST_CASE("a cache past its budget keeps every live array's values through many cuts and joins") {
    if (!memory::block_cache_stats().enabled) return;
    for (const std::size_t limit : {std::size_t{0}, std::size_t{16}}) {  // the default limit on pieces, and a low one
        CAPTURE(limit);
        memory::release_cached_blocks();
        memory::detail::set_block_cache_piece_limit(limit);
        const FixedBudget budget(48 * kMiB);
        std::vector<std::optional<Array>> slots(8);
        std::vector<float> values(slots.size());
        std::uint32_t state = 12345;  // a fixed sequence of sizes and frees
        const auto next = [&state] { return state = state * 1664525u + 1013904223u; };
        for (int op = 0; op < 400; ++op) {
            const std::size_t i = next() % slots.size();
            if (slots[i]) {
                slots[i].reset();
                continue;
            }
            const std::size_t floats = kFloatsPerMiB / 4 + next() % (12 * kFloatsPerMiB);  // 1-13 MiB
            slots[i].emplace(empty_array({floats}));
            values[i] = static_cast<float>(op);
            slots[i]->fill(values[i]);
            for (std::size_t j = 0; j < slots.size(); ++j) {  // no live array shares a page with another
                if (!slots[j]) continue;
                const Array& a = *slots[j];
                std::size_t wrong = 0;
                for (std::size_t k = 0; k < a.size(); k += 1021) wrong += a(k) != values[j];
                CAPTURE(op);
                CHECK(wrong == 0);
                CHECK(a(a.size() - 1) == values[j]);
            }
        }
        CHECK(memory::block_cache_stats().resized > 0);  // the budget was reached: blocks were cut and joined
        slots.clear();
        const Array past_budget = empty_array({2 * kFloatsPerMiB});  // at the limit: the most cut blocks go first
        CHECK(memory::block_cache_stats().pieces <= (limit == 0 ? 8192 : limit));
    }
    memory::detail::set_block_cache_piece_limit(0);
    memory::release_cached_blocks();
}

TEST_SUITE_END();
