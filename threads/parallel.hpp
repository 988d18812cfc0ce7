// xtgrad's own worker threads, for the few kernels it splits across cores itself (the
// batched attention products, big elementwise loops). Not OpenMP: on a 2-core machine an
// OpenMP runtime busy-waits next to OpenBLAS's threads, and every parallel region then waits
// out a scheduler quantum, ~8 ms (docs/performance.md, "Design choices").
//
// The pool is persistent: a std::thread spawn + join costs ~25 µs, which is as long as a
// small kernel. Workers sleep on a condition variable between jobs (after a short spin and
// a few yields, so back-to-back jobs do not pay a wake-up each).
//
//   set_num_threads(2);                              // the caller + 1 worker
//   parallel_for(rows, 64, [&](std::size_t r0, std::size_t r1) { ... rows [r0, r1) ... });
//
// parallel_for runs the chunks one per thread (the caller takes the first) and returns when
// all are done; a chunk whose worker has not started by the time the caller finished its own
// runs on the caller (a host may hold a vCPU for milliseconds). Which thread runs a chunk never
// changes its range, so results are the same bits. It runs serially with 1 thread, for fewer
// than 2 grains of work, and when called from inside a chunk (no nesting). The pool runs one
// job at a time: a chunk must not wait for another thread's parallel_for (that one waits for it).
#pragma once

#include <cstddef>
#include <functional>

namespace xtgrad {

// Threads xtgrad's own kernels use, the calling thread included (default 1: serial). The
// benchmark sets it with --threads, next to set_blas_threads(). It replaces the pool: a
// parallel_for running on another thread finishes on the old one, the next one takes the new.
// n outside [1, kMaxThreads] is an Error (a typo's 100000 would otherwise spawn 100000
// threads), and so are a call from inside a parallel_for body (at any thread count) and a
// worker the system cannot start; none changes the pool.
inline constexpr int kMaxThreads = 256;
void set_num_threads(int n);
int num_threads();

// fn(begin, end) over [0, n) in num_threads() contiguous chunks of at least `grain` items.
void parallel_for(std::size_t n, std::size_t grain, const std::function<void(std::size_t, std::size_t)>& fn);

// Below this many elements of work a kernel stays on the calling thread: waking the pool and
// waiting for it costs ~5-10 µs, the time one core takes for ~16-32 K simple elements.
inline constexpr std::size_t kParallelElements = std::size_t{1} << 15;

// fn(begin, end) over rows [0, rows) of `row_len` elements each, split over the pool when there
// are at least 2 x kParallelElements elements in all. For row kernels (softmax, layer norm,
// cross-entropy) and elementwise loops (rows of 1): each row's result depends only on that row,
// so the output is the same, bit for bit, for any thread count.
void parallel_rows(std::size_t rows, std::size_t row_len, const std::function<void(std::size_t, std::size_t)>& fn);

}  // namespace xtgrad
