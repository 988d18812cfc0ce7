// The pool behind parallel_for (threads/parallel.cpp): a chunk whose worker has not started by the
// time the caller finished its own runs on the caller, once, and the pool works as before after.
// The worker is held, deterministically, in a signal handler: what a host that takes its vCPU
// away does to it.
#include "tests/test_util.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace pool_test {

std::atomic<bool> held{false}, release{false};

// Keeps the interrupted worker here until the test releases it, 10 s at most: a pool that waits
// for it fails the checks below instead of hanging (lock-free atomics, clock_gettime and
// nanosleep: async-signal-safe).
void hold_worker(int) {
    held.store(true);
    timespec start{}, now{};
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (!release.load()) {
        const timespec pause{0, 1000000};
        nanosleep(&pause, nullptr);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec >= 10) return;
    }
}

// Waits up to 5 s for flag; whether it came.
bool wait_for(const std::atomic<bool>& flag) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!flag.load())
        if (std::chrono::steady_clock::now() > until) return false;
        else std::this_thread::yield();
    return true;
}

struct ChunkThreads {
    pthread_t of[2]{};
    int runs[2]{};
};

// parallel_for over 2 items on 2 threads: which thread ran each chunk, and how often. With
// `wait_for_worker`, chunk 0 waits (5 s at most) for chunk 1 to start elsewhere, so the worker
// takes it whenever it can.
ChunkThreads run_two_chunks(bool wait_for_worker) {
    ChunkThreads t;
    std::atomic<bool> second_started{false};
    xtgrad::parallel_for(2, 1, [&](std::size_t i0, std::size_t i1) {
        for (std::size_t i = i0; i < i1; ++i) {
            t.of[i] = pthread_self();
            ++t.runs[i];
            if (i == 1) second_started.store(true);
            if (i == 0 && wait_for_worker) wait_for(second_started);
        }
    });
    return t;
}

// parallel_for over n items: whether each item was visited exactly once
bool every_item_once(std::size_t n, std::size_t grain) {
    std::vector<int> seen(n, 0);
    xtgrad::parallel_for(n, grain, [&](std::size_t i0, std::size_t i1) {
        for (std::size_t i = i0; i < i1; ++i) ++seen[i];
    });
    return std::count(seen.begin(), seen.end(), 1) == static_cast<std::ptrdiff_t>(n);
}

// A thread the pool cannot start (a thread limit): this binary's pthread_create (below, ahead of
// the C library's) fails once this many more threads have started; -1: never
std::atomic<int> creates_until_failure{-1};

}  // namespace pool_test

TEST_SUITE_BEGIN("engine");

TEST_CASE("parallel_for: a chunk whose worker has not started runs on the caller, once; the pool works after") {
    using namespace xtgrad;
    using namespace pool_test;
    set_num_threads(2);
    const pthread_t caller = pthread_self();
    const ChunkThreads first = run_two_chunks(true);
    REQUIRE(first.runs[0] == 1);
    REQUIRE(first.runs[1] == 1);
    REQUIRE_MESSAGE(!pthread_equal(first.of[1], caller), "the worker did not start its chunk within 5 s");
    const pthread_t worker = first.of[1];

    struct sigaction hold {}, before{};
    hold.sa_handler = hold_worker;
    sigemptyset(&hold.sa_mask);
    REQUIRE(sigaction(SIGUSR1, &hold, &before) == 0);
    held = false;
    release = false;
    REQUIRE(pthread_kill(worker, SIGUSR1) == 0);
    REQUIRE(wait_for(held));

    // The worker sits in the handler: the caller runs its chunk, and returns without it.
    for (int job = 0; job < 3; ++job) {
        const ChunkThreads stolen = run_two_chunks(false);
        CHECK(stolen.runs[0] == 1);
        CHECK(stolen.runs[1] == 1);
        CHECK(pthread_equal(stolen.of[0], caller));
        CHECK(pthread_equal(stolen.of[1], caller));
    }
    // A result that depends on every chunk is whole.
    CHECK(pool_test::every_item_once(1000, 1));

    // Released, the worker finds the jobs it missed claimed and takes the next one's chunk again.
    release = true;
    const ChunkThreads after = run_two_chunks(true);
    CHECK(after.runs[0] == 1);
    CHECK(after.runs[1] == 1);
    CHECK(pthread_equal(after.of[1], worker));
    REQUIRE(sigaction(SIGUSR1, &before, nullptr) == 0);
    set_num_threads(1);
}

TEST_CASE("set_num_threads from inside a chunk is an Error and keeps the pool") {
    using namespace xtgrad;
    set_num_threads(2);
    std::atomic<int> refused{0};
    std::string message;
    std::mutex message_mutex;
    parallel_for(2, 1, [&](std::size_t, std::size_t) {
        try {
            set_num_threads(3);  // on the caller's chunk and on the worker's: each would end its own pool
        } catch (const Error& e) {
            ++refused;
            std::lock_guard<std::mutex> lock(message_mutex);
            message = e.what();
        }
    });
    CHECK(refused == 2);
    CHECK(message.find("set_num_threads: called from inside a parallel_for chunk (asked for 3 threads)") !=
          std::string::npos);
    CHECK(num_threads() == 2);
    CHECK(pool_test::every_item_once(1000, 1));
    set_num_threads(1);
}

TEST_CASE("set_num_threads is refused inside a parallel_for body at any thread count, serial bodies too") {
    using namespace xtgrad;
    for (const int threads : {1, 2}) {
        set_num_threads(threads);
        for (const std::size_t grain : {std::size_t{1}, std::size_t{64}}) {  // 64 > 2 items: one serial body
            bool refused = false;
            parallel_for(2, grain, [&](std::size_t i0, std::size_t) {
                if (i0 != 0) return;
                try {
                    set_num_threads(3);
                } catch (const Error&) {
                    refused = true;
                }
            });
            CHECK_MESSAGE(refused, "threads ", threads, ", grain ", grain);
            CHECK(num_threads() == threads);
        }
    }
    set_num_threads(1);
}

// Another thread resizing the pool while jobs run: each job finishes on the pool it started on
// (the old pool ends after its last job), every element is written once, nothing is freed under
// a job (the suite's ASan build reads it). The pool used to be destroyed under a running job.
TEST_CASE("set_num_threads from another thread while parallel_for runs") {
    using namespace xtgrad;
    std::atomic<bool> stop{false};
    std::atomic<int> resizes{0};
    std::thread resizer([&] {
        for (int i = 0; !stop.load(); ++i) {
            set_num_threads(1 + i % 3);
            ++resizes;
            std::this_thread::yield();
        }
    });
    int jobs = 0, whole = 0;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(400);
    while (std::chrono::steady_clock::now() < until || resizes.load() < 50) {
        whole += pool_test::every_item_once(4096, 64);
        ++jobs;
    }
    stop = true;
    resizer.join();
    CHECK(jobs > 0);
    CHECK(whole == jobs);
    CHECK(resizes.load() >= 50);
    set_num_threads(1);
    CHECK(num_threads() == 1);
}

TEST_CASE("set_num_threads where a worker cannot start is an Error and keeps the pool") {
    using namespace xtgrad;
    set_num_threads(2);
    pool_test::creates_until_failure = 1;  // the first new worker starts, the second does not
    CHECK_THROWS_WITH_AS(set_num_threads(4), doctest::Contains("set_num_threads: could not start worker 2 of 3"),
                         Error);
    pool_test::creates_until_failure = -1;
    CHECK(num_threads() == 2);
    CHECK(pool_test::every_item_once(1000, 1));
    set_num_threads(4);  // and it starts once threads can
    CHECK(num_threads() == 4);
    set_num_threads(1);
}

TEST_SUITE_END();

// Ahead of the C library's (and a sanitizer's, which the next one is then), for the test above.
extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*), void* arg) {
    using Create = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
    static const auto next = reinterpret_cast<Create>(dlsym(RTLD_NEXT, "pthread_create"));
    int left = pool_test::creates_until_failure.load();
    while (left > 0 && !pool_test::creates_until_failure.compare_exchange_weak(left, left - 1)) {
    }
    if (left == 0) return EAGAIN;
    return next(thread, attr, start, arg);
}
