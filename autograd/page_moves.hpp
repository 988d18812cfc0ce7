// What a page moved with mremap costs at its next touch, measured once per process. The block
// cache (array_allocator.cpp) reuses and moves pages rather than fault new ones in, which pays
// only where a moved page is as cheap to touch as one left in place: the hardware then walks the
// moved page-table entry as it walks any other. Under a hypervisor that shadows the guest's page
// tables (the PVM guests the project met on AMD family 26: "Hypervisor detected: PVM" at boot,
// though cpuid names another) the host has to rebuild each moved page's translation at its first
// touch, a fault the guest never sees: it shows as user time in whatever code touches the page
// first: 3.4-4.5 µs per page there over this probe's 64 pages (0.9-1.3 over 4096: the host seems
// to fill neighbours in at once), where the CPU walks the guest's own tables, a TLB miss.
// docs/performance.md ("The block cache and page moves") has the measurements. Internal.
#pragma once

#include <cstddef>

namespace xtgrad::memory {

inline constexpr std::size_t kPageBytes = 4096;  // what mmap maps and mremap moves (x86-64's small page)

struct PageMoveCost {
    double moved_us = 0;    // first write to a page just moved (mremap), µs per page: the fastest try
    double fresh_us = 0;    // first write to a newly mapped page (a page fault), µs per page
    bool measured = false;  // false: the probe could not map or move pages (then moves count as dear)
};

// Maps `pages` pages, writes each, moves them to another range, writes each again, timing both
// passes; up to `tries` times while the moved pass stays dear (a preemption can only make a try
// slower, so the fastest is the measure). Never throws.
PageMoveCost measure_page_moves(std::size_t pages, int tries);

// Above this a moved page's first touch pays a fault somewhere (the host's, when the guest saw
// none): 7x under the PVM guests' 64-page reading, and several times a TLB miss's page walk.
inline constexpr double kCheapMoveMicroseconds = 0.5;

// This process's measure (64 pages, up to 3 tries: 0.1-0.3 ms where moves are cheap, ~3 ms where
// they are not), taken at the first call; thread-safe.
const PageMoveCost& page_move_cost();
bool page_moves_cheap();

}  // namespace xtgrad::memory
