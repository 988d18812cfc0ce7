#include <xtgrad/autograd/array_allocator.hpp>
#include <xtgrad/autograd/error.hpp>

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

#ifndef MREMAP_MAYMOVE
#error "the block cache resizes mappings with Linux's mremap"
#endif

namespace xtgrad::memory {

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

constexpr std::size_t kPage = 4096;

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

void* heap_allocate(std::size_t bytes) {
    void* p = std::aligned_alloc(kAlignment, round_up(std::max<std::size_t>(bytes, 1), kAlignment));
    if (p == nullptr) throw std::bad_alloc();
    return p;
}

// XTGRAD_BLOCK_CACHE: unset, "" or "1" on, "0" off; anything else is refused by every large
// allocation (an Error naming the variable) rather than guessed.
enum class Setting { on, off, invalid };
Setting setting() {
    static const Setting s = [] {
        const char* env = std::getenv("XTGRAD_BLOCK_CACHE");
        if (env == nullptr || std::strcmp(env, "") == 0 || std::strcmp(env, "1") == 0)
            return kAddressSanitizer ? Setting::off : Setting::on;
        return std::strcmp(env, "0") == 0 ? Setting::off : Setting::invalid;
    }();
    return s;
}

bool cache_enabled() {
    const Setting s = setting();
    if (s == Setting::invalid)
        fail("XTGRAD_BLOCK_CACHE: '{}' is neither 1 (keep large blocks for reuse, the default) nor 0 (take them "
             "from the C heap)",
             std::string(std::getenv("XTGRAD_BLOCK_CACHE")).substr(0, 40));
    return s == Setting::on;
}

class BlockCache {
public:
    struct Block {  // a mapping
        void* p;
        std::size_t size;
    };

    // A block for `bytes`, starting `color` bytes into its mapping: successive blocks start at
    // different offsets within a page (64-byte steps, 64 offsets), as heap blocks do. Mappings all
    // start on a page, and a kernel that reads x[i] and writes y[i] of two page-aligned arrays
    // stalls on 4K aliasing (the store's address matches the load's in its low 12 bits): seed-d's
    // step ran 10-20 % slower with uncoloured blocks.
    void* take(std::size_t bytes) {
        const std::size_t need = round_up(bytes + kPage - kAlignment, kPage);
        const std::lock_guard<std::mutex> lock(mutex_);
        Block b = reuse_or_resize(need);
        if (b.p == nullptr) {
            b = {map(need), need};
            ++stats_.mapped;
        }
        next_color_ = (next_color_ + 17 * kAlignment) % kPage;  // 17 is odd: all 64 offsets in turn
        void* p = static_cast<char*>(b.p) + next_color_;
        live_.emplace(p, b);
        stats_.live_bytes += b.size;
        stats_.peak_live_bytes = std::max(stats_.peak_live_bytes, stats_.live_bytes);
        stats_.peak_mapped_bytes = std::max(stats_.peak_mapped_bytes, stats_.live_bytes + stats_.cached_bytes);
        return p;
    }

    void give_back(void* p) noexcept {
        const std::lock_guard<std::mutex> lock(mutex_);
        const auto it = live_.find(p);
        if (it == live_.end()) return;  // not ours: nothing sane to do in a noexcept free
        const Block b = it->second;
        live_.erase(it);
        stats_.live_bytes -= b.size;
        try {
            cached_.emplace(b.size, b.p);
            stats_.cached_bytes += b.size;
        } catch (...) {  // no memory for the cache's own bookkeeping: return the block instead
            ::munmap(b.p, b.size);
        }
    }

    void release() {
        const std::lock_guard<std::mutex> lock(mutex_);
        release_locked();
    }

    BlockCacheStats stats() {
        const std::lock_guard<std::mutex> lock(mutex_);
        BlockCacheStats s = stats_;
        s.enabled = true;
        s.cached_blocks = cached_.size();
        return s;
    }

private:
    // A cached block for `need` bytes, or {null, 0} for a new mapping. A block at most 1/8 larger
    // is taken as it is: of the blocks of the smallest fitting size, the one freed last, whose
    // lines are the likeliest still in cache (a product's C, say, written over a block the step
    // has just freed). Intel Xeon model 207, alternating runs against the block freed first:
    // seed-d at 1 thread, step 1013.5 -> 987.1 ms and inference 340.6 -> 329.5 (4 rounds); at 2
    // threads step 567 -> 547 (6 rounds); the Winter Games step in backward 93.9 -> 88.7 (5).
    // Otherwise a new mapping while live + cached + need stays within the budget: the highest
    // live total so far plus 1/32 of it or 128 MiB, whichever is more, which lets the cache settle
    // on the sizes a step asks for instead of reshaping blocks on every step (page faults: ~340 ms
    // per GiB on the benchmark's machine; with 1/32 alone, seed-d's step reshaped ~230 MB each
    // time and ran 10 % slower than from the heap). Past the budget, a cached block is resized to
    // `need` (the smallest larger one shrunk, or the largest smaller one grown: mremap keeps the
    // pages it can) and, if that grew past it, the smallest cached blocks are unmapped: resident
    // memory stays within the budget while the cache has any.
    static constexpr std::size_t kSlackDivisor = 32, kSlackFloor = std::size_t{128} << 20;
    Block reuse_or_resize(std::size_t need) {
        if (cached_.empty()) return {nullptr, 0};
        auto it = cached_.lower_bound(need);
        if (it != cached_.end()) it = std::prev(cached_.upper_bound(it->first));  // equal sizes: in the order freed
        if (it != cached_.end() && it->first <= need + need / 8) {
            const Block b{it->second, it->first};
            take_from_cache(it);
            ++stats_.reused;
            return b;
        }
        const std::size_t budget = stats_.peak_live_bytes + std::max(stats_.peak_live_bytes / kSlackDivisor, kSlackFloor);
        if (stats_.live_bytes + stats_.cached_bytes + need <= budget) return {nullptr, 0};
        if (it == cached_.end()) it = std::prev(cached_.end());
        void* p = ::mremap(it->second, it->first, need, MREMAP_MAYMOVE);
        if (p == MAP_FAILED) return {nullptr, 0};  // the old block stays cached; map a new one
        take_from_cache(it);
        ++stats_.resized;
        while (!cached_.empty() && stats_.live_bytes + stats_.cached_bytes + need > budget) {
            ::munmap(cached_.begin()->second, cached_.begin()->first);
            take_from_cache(cached_.begin());
        }
        return {p, need};
    }

    void take_from_cache(std::multimap<std::size_t, void*>::iterator it) {
        stats_.cached_bytes -= it->first;
        cached_.erase(it);
    }

    void* map(std::size_t need) {
        void* p = ::mmap(nullptr, need, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED && !cached_.empty()) {  // out of address space or memory: drop the cache, try again
            release_locked();
            p = ::mmap(nullptr, need, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        }
        if (p == MAP_FAILED) throw std::bad_alloc();
        return p;
    }

    void release_locked() {
        for (const auto& [size, p] : cached_) ::munmap(p, size);
        cached_.clear();
        stats_.cached_bytes = 0;
    }

    std::mutex mutex_;
    std::multimap<std::size_t, void*> cached_;      // size -> a freed block of that size
    std::unordered_map<void*, Block> live_;  // what take() returned -> its mapping
    std::size_t next_color_ = 0;
    BlockCacheStats stats_;
};

// Never destroyed: arrays in other static objects may be freed after it would have been.
BlockCache& cache() {
    static BlockCache* c = new BlockCache;
    return *c;
}

}  // namespace

void* allocate(std::size_t bytes) {
    if (bytes < kLargeBlockBytes || !cache_enabled()) return heap_allocate(bytes);
    return cache().take(bytes);
}

void deallocate(void* p, std::size_t bytes) noexcept {
    if (p == nullptr) return;
    // The same test as allocate's: a large block exists only if the cache was on when it was taken
    if (bytes < kLargeBlockBytes || setting() != Setting::on) std::free(p);
    else cache().give_back(p);
}

BlockCacheStats block_cache_stats() {
    if (setting() != Setting::on) return {};
    return cache().stats();
}

void release_cached_blocks() {
    if (setting() == Setting::on) cache().release();
}

}  // namespace xtgrad::memory
