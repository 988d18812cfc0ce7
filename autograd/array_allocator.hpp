// Where every Array's elements live. Blocks under 1 MiB come from the C heap; larger ones (a
// training step's activations and gradients) from a block cache of their own mappings.
//
// Why a cache: a training step frees and asks again for the same few large sizes every step.
// From glibc's heap (kept, not returned, so that no step pays page faults again) those blocks
// left holes between the ones backward keeps, and the heap's high-water mark, i.e. the process's
// resident memory, sat ~1.1 GB above the live bytes on tutorial B at batch 64. Here each large
// block is its own mapping: a freed block waits in the cache for the next request of about its
// size, and a request that finds none resizes a cached block in place (mremap: shrinking hands
// the tail back to the kernel, growing keeps the pages already there), so resident memory grows
// only when the cache is empty. Resident = live + cached; `block_cache_stats()` reports both.
//
// Builds with AddressSanitizer send every block to the heap (the sanitizer watches malloc, not
// mmap), and so does XTGRAD_BLOCK_CACHE=0 at start-up (for heaptrack or valgrind, which also
// watch malloc only).
#pragma once

#include <cstddef>
#include <new>

namespace xtgrad {

namespace memory {

inline constexpr std::size_t kAlignment = 64;            // a cache line, AVX-512's vector width
inline constexpr std::size_t kLargeBlockBytes = 1 << 20;  // from here on, the block cache

// `bytes` aligned to kAlignment; std::bad_alloc when the system has no memory left.
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
    std::size_t resized = 0;  // ... by a cached block resized in place
    std::size_t mapped = 0;   // ... by a new mapping
};
BlockCacheStats block_cache_stats();

// Unmaps every cached block (torch.cuda.empty_cache's counterpart); live blocks are untouched.
void release_cached_blocks();

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
