// Where every Array's elements live. Blocks under 1 MiB come from the C heap; larger ones (a
// training step's activations and gradients) from a block cache of their own mappings.
//
// Why a cache: a training step frees and asks again for the same few large sizes every step.
// From glibc's heap (kept, not returned, so that no step pays page faults again) those blocks
// left holes between the ones backward keeps, and the heap's high-water mark, i.e. the process's
// resident memory, sat ~1.1 GB above the live bytes on tutorial B at batch 64. Here each large
// block is whole pages of mappings of its own: a freed block waits in the cache for the next
// request of about its size, and past a budget (the live peak plus a slack) a request that finds
// none is made of cached pages instead of new ones: the head of a larger block, or smaller blocks'
// pages moved side by side (mremap moves page-table entries; a new page costs a fault and its
// clearing), so resident memory grows only when the cache is empty, and a step that asks for other
// sizes in backward than in forward faults no pages in. Resident = live + cached;
// `block_cache_stats()` reports both.
//
// Builds with AddressSanitizer send every block to the heap (the sanitizer watches malloc, not
// mmap), and so does XTGRAD_BLOCK_CACHE=0 at start-up (for heaptrack or valgrind, which also
// watch malloc only). Unset, the machine decides (block_cache_default_on, below): the cache saves
// memory, and where page moves are dear it cost time.
#pragma once

#include <cstddef>
#include <new>

namespace xtgrad {

namespace memory {

inline constexpr std::size_t kAlignment = 64;            // a cache line, AVX-512's vector width
inline constexpr std::size_t kLargeBlockBytes = 1 << 20;  // from here on, the block cache

// No array is larger than a process can address (x86-64's 128 TiB of user space): a larger
// request is an Error before any size arithmetic can wrap.
inline constexpr std::size_t kMaxArrayBytes = std::size_t{1} << 47;

// `bytes` aligned to kAlignment; an xtgrad::Error naming the size when the system has no memory
// left for it (not std::bad_alloc: every failure a user's call can meet is an Error).
void* allocate(std::size_t bytes);
// A block from allocate(bytes), with the same `bytes`.
void deallocate(void* p, std::size_t bytes) noexcept;

struct BlockCacheStats {
    bool enabled = false;         // false under ASan or XTGRAD_BLOCK_CACHE=0
    std::size_t live_bytes = 0;   // in large blocks arrays hold now
    std::size_t peak_live_bytes = 0;
    std::size_t cached_bytes = 0;  // freed large blocks kept for reuse
    std::size_t peak_mapped_bytes = 0;  // live + cached at most: what the blocks added to resident memory
    std::size_t cached_blocks = 0;
    std::size_t reused = 0;   // requests served by a cached block as it was
    std::size_t resized = 0;  // ... by cached pages: a larger block's head, or blocks joined
    std::size_t mapped = 0;   // ... by a new mapping
    std::size_t new_bytes = 0;  // new pages mapped for requests (each faults in on first touch)
    std::size_t pieces = 0;     // ranges mremap can move in one call, in all blocks (at most ~8192)
};
BlockCacheStats block_cache_stats();

// Whether the block cache is on when XTGRAD_BLOCK_CACHE is unset: on where a page moved with
// mremap is as cheap to touch as any other, measured at run time (autograd/page_moves.hpp); off
// where each moved page pays a hidden fault (a hypervisor's shadowed page tables), which slowed
// training up to 2x (autograd/speed_switches.cpp).
bool block_cache_default_on();

// Unmaps every cached block (torch.cuda.empty_cache's counterpart); live blocks are untouched.
void release_cached_blocks();

namespace detail {  // for tests: the paths a real budget or a failing kernel would take
// A fixed budget for live + cached bytes instead of the live peak plus its slack; 0 restores it.
void set_block_cache_budget(std::size_t bytes);
// The next `n` page moves succeed and the following ones fail, as mremap does when the kernel is
// out of memory for its mappings; -1 (the default) never fails on purpose.
void fail_block_moves_after(int n);
// The pieces all blocks may hold before the cache unmaps its most cut blocks; 0 restores 8192.
void set_block_cache_piece_limit(std::size_t pieces);
// Past its budget: 1 cut and join cached pages, 0 map new ones (XTGRAD_BLOCK_CACHE_CUT's two
// ways); -1 (the default) follows the variable.
void set_block_cache_cut(int on);
}  // namespace detail

}  // namespace memory

// The allocator in every Array's type (autograd/array.hpp). Stateless: any two compare equal.
template <class T>
struct ArrayAllocator {
    using value_type = T;
    template <class U>
    struct rebind {
        using other = ArrayAllocator<U>;
    };

    ArrayAllocator() noexcept = default;
    template <class U>
    ArrayAllocator(const ArrayAllocator<U>&) noexcept {}  // NOLINT: rebinding, as std::allocator

    T* allocate(std::size_t n) {
        if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
        return static_cast<T*>(memory::allocate(n * sizeof(T)));
    }
    void deallocate(T* p, std::size_t n) noexcept { memory::deallocate(p, n * sizeof(T)); }

    template <class U>
    bool operator==(const ArrayAllocator<U>&) const noexcept {
        return true;
    }
    template <class U>
    bool operator!=(const ArrayAllocator<U>&) const noexcept {
        return false;
    }
};

}  // namespace xtgrad
