#include <xtgrad/autograd/page_moves.hpp>

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <limits>

namespace xtgrad::memory {

namespace {

// Writes one byte of each page of [p, p + bytes); the time it took, in µs.
double write_each_page(char* p, std::size_t bytes) {
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t at = 0; at < bytes; at += kPageBytes) static_cast<volatile char*>(p)[at] = 1;
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
}

void* map_pages(std::size_t bytes) {
    return ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

// One try: {fresh, moved} µs per page, or {-1, -1} when a map or the move failed.
struct Try {
    double fresh_us = -1, moved_us = -1;
};
Try one_try(std::size_t pages) {
    const std::size_t bytes = pages * kPageBytes;
    void* from = map_pages(bytes);
    if (from == MAP_FAILED) return {};
    void* to = map_pages(bytes);  // the destination range, replaced by the move
    if (to == MAP_FAILED) {
        ::munmap(from, bytes);
        return {};
    }
    Try t;
    t.fresh_us = write_each_page(static_cast<char*>(from), bytes) / static_cast<double>(pages);
    if (::mremap(from, bytes, bytes, MREMAP_MAYMOVE | MREMAP_FIXED, to) == MAP_FAILED) {
        ::munmap(from, bytes);
        ::munmap(to, bytes);
        return {};
    }
    t.moved_us = write_each_page(static_cast<char*>(to), bytes) / static_cast<double>(pages);
    ::munmap(to, bytes);
    return t;
}

}  // namespace

PageMoveCost measure_page_moves(std::size_t pages, int tries) {
    PageMoveCost cost;
    if (pages == 0 || pages > std::numeric_limits<std::size_t>::max() / kPageBytes) return cost;
    for (int i = 0; i < tries; ++i) {
        const Try t = one_try(pages);
        if (t.moved_us < 0) break;
        cost.moved_us = cost.measured ? std::min(cost.moved_us, t.moved_us) : t.moved_us;
        cost.fresh_us = cost.measured ? std::min(cost.fresh_us, t.fresh_us) : t.fresh_us;
        cost.measured = true;
        if (cost.moved_us < kCheapMoveMicroseconds) break;
    }
    return cost;
}

const PageMoveCost& page_move_cost() {
    static const PageMoveCost cost = measure_page_moves(64, 3);
    return cost;
}

bool page_moves_cheap() {
    const PageMoveCost& c = page_move_cost();
    return c.measured && c.moved_us < kCheapMoveMicroseconds;
}

}  // namespace xtgrad::memory
