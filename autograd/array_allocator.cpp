#include <xtgrad/autograd/array_allocator.hpp>
#include <xtgrad/autograd/speed_switches.hpp>
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/page_moves.hpp>

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

#ifndef MREMAP_MAYMOVE
#error "the block cache moves pages between mappings with Linux's mremap"
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

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

[[noreturn]] void out_of_memory(std::size_t bytes) {
    fail("out of memory: an array of {} bytes ({:.1f} GiB) could not be allocated", bytes,
         static_cast<double>(bytes) / static_cast<double>(std::size_t{1} << 30));
}

void* heap_allocate(std::size_t bytes) {
    void* p = std::aligned_alloc(kAlignment, round_up(std::max<std::size_t>(bytes, 1), kAlignment));
    if (p == nullptr) out_of_memory(bytes);
    return p;
}

// XTGRAD_BLOCK_CACHE (kBlockCacheSwitch): 1 on, 0 off, unset or empty this machine's default
// (block_cache_default_on); anything else is refused by
// every large allocation (an Error naming the variable) rather than guessed. Under
// AddressSanitizer on means off: the sanitizer must see each block's own allocation.
using xtgrad::detail::kBlockCacheSwitch;
using xtgrad::detail::SwitchValue;

SwitchValue cache_setting() {
    static const SwitchValue value = xtgrad::detail::switch_value(kBlockCacheSwitch);
    return value;
}

// Whether large blocks come from the cache; never throws (deallocate's test).
bool cache_on() {
    static const bool machine_default = kBlockCacheSwitch.unset_means();
    const SwitchValue v = cache_setting();
    return (v == SwitchValue::on || (v == SwitchValue::unset && machine_default)) && !kAddressSanitizer;
}

// XTGRAD_BLOCK_CACHE_CUT (kBlockCacheCutSwitch): past its budget the cache makes a request of
// cached pages (cut_larger, join: 1 or unset) or unmaps cached blocks and maps new pages (0).
// Where moved pages are dear (page_moves.hpp) the cache is off by default; asked for there, its
// cut still saved more new pages than its moves cost on all but one-thread seed-d.
SwitchValue cut_setting() {
    static const SwitchValue value = xtgrad::detail::switch_value(xtgrad::detail::kBlockCacheCutSwitch);
    return value;
}

std::atomic<int> cut_override{-1};  // set_block_cache_cut: -1 follows the switch
bool cut_on() {
    const int o = cut_override.load(std::memory_order_relaxed);
    return o >= 0 ? o == 1 : cut_setting() != SwitchValue::off;
}

// The same, for a new block: an invalid setting is an Error here.
bool cache_enabled() {
    if (cache_setting() == SwitchValue::invalid) xtgrad::detail::fail_invalid_switch(kBlockCacheSwitch);
    if (cut_setting() == SwitchValue::invalid) xtgrad::detail::fail_invalid_switch(xtgrad::detail::kBlockCacheCutSwitch);
    return cache_on();
}

// Test seams (array_allocator.hpp, memory::detail): a fixed budget, and a failing page move.
std::atomic<std::size_t> budget_override{0};  // 0: the rule in reuse_or_recut
std::atomic<int> moves_before_failure{-1};    // -1: moves never fail on purpose
constexpr std::size_t kDefaultPieceLimit = 8192;
std::atomic<std::size_t> piece_limit{kDefaultPieceLimit};  // unless a test lowers it

// Fresh zero pages (untouched: they fault in on first write), at `at` (replacing what is there)
// or where the kernel chooses; MAP_FAILED when it cannot.
void* map_anonymous(std::size_t bytes, void* at = nullptr) {
    return ::mmap(at, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0), -1, 0);
}

class BlockCache {
public:
    // A block: whole pages at p, made of pieces that each lie within one of the kernel's mappings
    // (a VMA), because mremap moves a range only within one: a new mapping is one piece, a join
    // lines up the pieces of the blocks it moves, and a cut splits the piece it crosses.
    struct Block {
        char* p = nullptr;
        std::size_t size = 0;
        std::vector<std::size_t> pieces;  // lengths, in address order, summing to size
    };

    // A block for `bytes`, starting `color` bytes into its mapping: successive blocks start at
    // different offsets within a page (64-byte steps, 64 offsets), as heap blocks do. Mappings all
    // start on a page, and a kernel that reads x[i] and writes y[i] of two page-aligned arrays
    // stalls on 4K aliasing (the store's address matches the load's in its low 12 bits): seed-d's
    // step ran 10-20 % slower with uncoloured blocks.
    void* take(std::size_t bytes) {
        const std::size_t need = round_up(bytes + kPageBytes - kAlignment, kPageBytes);
        const std::lock_guard<std::mutex> lock(mutex_);
        Block b = reuse_or_recut(need);
        if (b.p == nullptr) {
            b = new_block(need);
            ++stats_.mapped;
        }
        next_color_ = (next_color_ + 17 * kAlignment) % kPageBytes;  // 17 is odd: all 64 offsets in turn
        void* p = b.p + next_color_;
        stats_.live_bytes += b.size;
        live_.emplace(p, std::move(b));
        stats_.peak_live_bytes = std::max(stats_.peak_live_bytes, stats_.live_bytes);
        stats_.peak_mapped_bytes = std::max(stats_.peak_mapped_bytes, stats_.live_bytes + stats_.cached_bytes);
        return p;
    }

    void give_back(void* p) noexcept {
        const std::lock_guard<std::mutex> lock(mutex_);
        const auto it = live_.find(p);
        if (it == live_.end()) return;  // not ours: nothing sane to do in a noexcept free
        Block b = std::move(it->second);
        live_.erase(it);
        stats_.live_bytes -= b.size;
        try {
            cache(std::move(b));
        } catch (...) {  // no memory for the cache's own bookkeeping: return the block instead
            unmap(b);
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
        s.pieces = pieces_;
        return s;
    }

private:
    // A cached block for `need` bytes, or an empty Block for a new mapping. A block at most 1/8
    // larger is taken as it is: of the blocks of the smallest fitting size, the one freed last, whose
    // lines are the likeliest still in cache (a product's C, say, written over a block the step
    // has just freed). Intel Xeon model 207, alternating runs against the block freed first:
    // seed-d at 1 thread, step 1013.5 -> 987.1 ms and inference 340.6 -> 329.5 (4 rounds); at 2
    // threads step 567 -> 547 (6 rounds); the Winter Games step in backward 93.9 -> 88.7 (5).
    // Otherwise a new mapping while live + cached + need stays within the budget: the highest
    // live total so far plus 1/32 of it or 128 MiB, whichever is more, which lets the cache settle
    // on the sizes a step asks for (with 1/32 alone, seed-d's step re-cut ~230 MB each time).
    // Past the budget the request is made of cached pages, not new ones: part of a larger block
    // (cut_larger; the rest stays cached), or the cached blocks' pages moved side by side into one
    // range (join; mremap moves page-table entries: ~10 µs per MiB, where a new page costs a fault
    // and the kernel's clearing, ~410 µs per MiB on the Intel Xeon model 207 guest). Tutorial B
    // asks for other sizes in backward (weight gradients of 1-4 MiB) than in forward (activations
    // of 13-122 MB), so its step used to map ~205 MiB afresh; now ~1 MiB. Then, if live + cached
    // still exceeds the budget, the smallest cached blocks are unmapped.
    static constexpr std::size_t kSlackDivisor = 32, kSlackFloor = std::size_t{128} << 20;
    Block reuse_or_recut(std::size_t need) {
        if (cached_.empty()) return {};
        auto it = cached_.lower_bound(need);
        if (it != cached_.end()) it = std::prev(cached_.upper_bound(it->first));  // equal sizes: in the order freed
        if (it != cached_.end() && it->first <= need + need / 8) {
            ++stats_.reused;
            return take_from_cache(it);
        }
        const std::size_t fixed = budget_override.load(std::memory_order_relaxed);
        const std::size_t budget =
            fixed != 0 ? fixed
                       : stats_.peak_live_bytes + std::max(stats_.peak_live_bytes / kSlackDivisor, kSlackFloor);
        if (stats_.live_bytes + stats_.cached_bytes + need <= budget) return {};
        if (!cut_on()) {  // no cut: room for new pages, the smallest blocks first
            while (!cached_.empty() && stats_.live_bytes + stats_.cached_bytes + need > budget)
                unmap(take_from_cache(cached_.begin()));
            return {};
        }
        if (pieces_ >= piece_limit.load(std::memory_order_relaxed)) unmap_most_cut();
        if (cached_.empty()) return {};
        it = cached_.lower_bound(need);
        Block b = it != cached_.end() ? cut_larger(it, need) : join(need);
        if (b.p != nullptr) ++stats_.resized;
        while (!cached_.empty() && stats_.live_bytes + stats_.cached_bytes + (b.p ? b.size : need) > budget)
            unmap(take_from_cache(cached_.begin()));
        return b;
    }

    // Every piece can be a mapping of the kernel's, whose number per process is limited
    // (vm.max_map_count, 65530 by default): pieces are at least kMinPiece long where the cache
    // cuts them (a shorter tail stays with its block), a join takes at most kMaxPiecesPerBlock,
    // and once all blocks hold piece_limit (kDefaultPieceLimit) the cached blocks cut the most are unmapped
    // until a quarter of the pieces are gone (their bytes fault in again once). Tutorial B's step
    // adds ~20 pieces at first (sizes that do not line up), fewer as the cache settles.
    static constexpr std::size_t kMinPiece = std::size_t{256} << 10, kMaxPiecesPerBlock = 512;

    void unmap_most_cut() {
        const std::size_t target = piece_limit.load(std::memory_order_relaxed) / 4 * 3;
        while (pieces_ > target && !cached_.empty()) {
            auto most = cached_.begin();
            for (auto it = cached_.begin(); it != cached_.end(); ++it)
                if (it->second.pieces.size() > most->second.pieces.size()) most = it;
            unmap(take_from_cache(most));
        }
    }

    // `need` bytes of a cached block larger than need + need/8 (`smallest`, the smallest such):
    // where a block's pieces meet within [need, need + need/8] from its start or its end, those
    // pieces as they are (so cuts do not multiply the pieces step after step); else the head of
    // the smallest, its piece cut.
    Block cut_larger(std::multimap<std::size_t, Block>::iterator smallest, std::size_t need) {
        const std::size_t slack = need / 8;
        int scanned = 0;
        for (auto it = smallest; it != cached_.end() && scanned < kMaxScanned; ++it, ++scanned) {
            const Block& b = it->second;
            std::size_t start = 0;
            for (std::size_t i = 0; i + 1 < b.pieces.size(); ++i) {
                start += b.pieces[i];
                const std::size_t head = start, tail = b.size - start;
                if (head >= need && head <= need + slack) {
                    Block out = take_from_cache(it);
                    cache(cut(out, head));
                    return out;
                }
                if (tail >= need && tail <= need + slack) {
                    Block rest = take_from_cache(it);
                    Block out = cut(rest, start);
                    cache(std::move(rest));
                    return out;
                }
            }
        }
        return head_of(take_from_cache(smallest), need);
    }
    static constexpr int kMaxScanned = 64;

    // The first `need` bytes of b; the rest goes back to the cache, if it is worth a piece.
    Block head_of(Block b, std::size_t need) {
        if (b.size - need >= kMinPiece) cache(cut(b, need));
        return b;
    }

    // Cuts b at `at` bytes (a page boundary inside it): b keeps the head, the tail is returned.
    Block cut(Block& b, std::size_t at) {
        Block tail{b.p + at, b.size - at, {}};
        std::size_t start = 0, i = 0;
        while (start + b.pieces[i] <= at) start += b.pieces[i++];  // piece i holds byte `at`
        if (start < at) {
            tail.pieces.push_back(start + b.pieces[i] - at);
            b.pieces[i] = at - start;
            ++i;
            ++pieces_;
        }
        tail.pieces.insert(tail.pieces.end(), b.pieces.begin() + static_cast<std::ptrdiff_t>(i), b.pieces.end());
        b.pieces.resize(i);
        b.size = at;
        return tail;
    }

    // `need` bytes from the cached blocks, all smaller than need: a new range whose parts are the
    // blocks' pages moved in (the largest first, the last one the smallest that closes the gap,
    // cut if its tail is worth keeping), and new pages for what the cache cannot cover.
    Block join(std::size_t need) {
        std::vector<Block> parts;
        std::size_t gap = need, count = 0;
        while (gap > 0 && !cached_.empty()) {
            auto it = cached_.lower_bound(gap);
            if (it == cached_.end()) it = std::prev(cached_.end());
            if (count + it->second.pieces.size() > kMaxPiecesPerBlock) break;
            Block part = take_from_cache(it);
            if (part.size > gap) part = head_of(std::move(part), gap);
            gap -= std::min(gap, part.size);
            count += part.pieces.size();
            parts.push_back(std::move(part));
        }
        if (parts.empty()) return {};
        std::size_t total = gap;
        for (const Block& part : parts) total += part.size;
        void* range = map_anonymous(total);
        if (range == MAP_FAILED) {
            for (Block& part : parts) cache(std::move(part));
            return {};
        }
        Block out{static_cast<char*>(range), total, {}};
        std::size_t at = 0;
        for (std::size_t k = 0; k < parts.size(); ++k) {
            const std::size_t moved = move(parts[k], out.p + at);
            if (moved < parts[k].pieces.size()) return refill_after_failed_move(out, parts, k, moved);
            out.pieces.insert(out.pieces.end(), parts[k].pieces.begin(), parts[k].pieces.end());
            at += parts[k].size;
        }
        if (gap > 0) {  // the range's own pages, untouched yet: one piece of its mapping
            out.pieces.push_back(gap);
            ++pieces_;
            stats_.new_bytes += gap;
        }
        return out;
    }

    // Moves b's pieces to `to` (a range of ours, which they replace) in order; the number moved.
    std::size_t move(const Block& b, char* to) {
        std::size_t at = 0, moved = 0;
        for (const std::size_t len : b.pieces) {
            const int left = moves_before_failure.load(std::memory_order_relaxed);
            if (left == 0) break;
            if (left > 0) moves_before_failure.store(left - 1, std::memory_order_relaxed);
            if (::mremap(b.p + at, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to + at) == MAP_FAILED) break;
            at += len;
            ++moved;
        }
        return moved;
    }

    // A move failed (the kernel out of memory for its bookkeeping), and the kernel may have
    // unmapped its destination already: what was moved stays, the rest of the range is mapped
    // anew in one piece, and the pages not moved go back to the cache. If even that mapping
    // fails, the whole range is unmapped and the request gets a new mapping.
    Block refill_after_failed_move(Block& out, std::vector<Block>& parts, std::size_t failed, std::size_t moved) {
        Block& part = parts[failed];
        const std::size_t moved_bytes = std::accumulate(part.pieces.begin(),
                                                        part.pieces.begin() + static_cast<std::ptrdiff_t>(moved),
                                                        std::size_t{0});
        out.pieces.insert(out.pieces.end(), part.pieces.begin(), part.pieces.begin() + static_cast<std::ptrdiff_t>(moved));
        if (moved < part.pieces.size()) {
            Block rest{part.p + moved_bytes, part.size - moved_bytes,
                       {part.pieces.begin() + static_cast<std::ptrdiff_t>(moved), part.pieces.end()}};
            cache(std::move(rest));
        }
        for (std::size_t k = failed + 1; k < parts.size(); ++k) cache(std::move(parts[k]));
        const std::size_t filled = std::accumulate(out.pieces.begin(), out.pieces.end(), std::size_t{0});
        void* rest = map_anonymous(out.size - filled, out.p + filled);
        if (rest == MAP_FAILED) {
            ::munmap(out.p, out.size);
            pieces_ -= out.pieces.size();
            return {};
        }
        out.pieces.push_back(out.size - filled);
        ++pieces_;
        stats_.new_bytes += out.size - filled;
        return out;
    }

    Block new_block(std::size_t need) {
        void* p = map_anonymous(need);
        if (p == MAP_FAILED && !cached_.empty()) {  // out of address space or memory: drop the cache, try again
            release_locked();
            p = map_anonymous(need);
        }
        if (p == MAP_FAILED) out_of_memory(need);
        ++pieces_;
        stats_.new_bytes += need;
        return {static_cast<char*>(p), need, {need}};
    }

    void cache(Block b) {
        const std::size_t size = b.size;
        cached_.emplace(size, std::move(b));
        stats_.cached_bytes += size;
    }

    Block take_from_cache(std::multimap<std::size_t, Block>::iterator it) {
        Block b = std::move(it->second);
        stats_.cached_bytes -= b.size;
        cached_.erase(it);
        return b;
    }

    void unmap(const Block& b) noexcept {
        ::munmap(b.p, b.size);
        pieces_ -= b.pieces.size();
    }

    void release_locked() {
        for (const auto& [size, b] : cached_) unmap(b);
        cached_.clear();
        stats_.cached_bytes = 0;
    }

    std::mutex mutex_;
    std::multimap<std::size_t, Block> cached_;  // size -> a freed block of that size
    std::unordered_map<void*, Block> live_;     // what take() returned -> its block
    std::size_t pieces_ = 0;                    // in all blocks, live and cached
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
    if (bytes > kMaxArrayBytes) out_of_memory(bytes);  // before round_up could wrap
    if (bytes < kLargeBlockBytes || !cache_enabled()) return heap_allocate(bytes);
    return cache().take(bytes);
}

void deallocate(void* p, std::size_t bytes) noexcept {
    if (p == nullptr) return;
    // The same test as allocate's: a large block exists only if the cache was on when it was taken
    if (bytes < kLargeBlockBytes || !cache_on()) std::free(p);
    else cache().give_back(p);
}

bool block_cache_default_on() { return xtgrad::detail::kBlockCacheSwitch.unset_means(); }

BlockCacheStats block_cache_stats() {
    if (!cache_on()) return {};
    return cache().stats();
}

void release_cached_blocks() {
    if (cache_on()) cache().release();
}

void detail::set_block_cache_budget(std::size_t bytes) { budget_override.store(bytes, std::memory_order_relaxed); }
void detail::fail_block_moves_after(int n) { moves_before_failure.store(n, std::memory_order_relaxed); }
void detail::set_block_cache_cut(int on) { cut_override.store(on < 0 ? -1 : on != 0, std::memory_order_relaxed); }
void detail::set_block_cache_piece_limit(std::size_t pieces) {
    piece_limit.store(pieces == 0 ? kDefaultPieceLimit : pieces, std::memory_order_relaxed);
}

}  // namespace xtgrad::memory
