// The worker pool behind parallel_for (threads/parallel.hpp).
//
// One job at a time: the caller publishes (fn, n, chunk count) under the mutex, bumps the
// generation and wakes the workers; worker i runs chunk i + 1, the caller runs chunk 0, and
// the caller waits until `pending` drops to 0. Workers spin and yield briefly on the
// generation before sleeping, so a burst of small jobs does not pay a futex wake-up per job,
// and a waiting worker never holds a core another thread (OpenBLAS's) wants.
#include <xtgrad/threads/parallel.hpp>

#include <xtgrad/autograd/error.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define XTGRAD_CPU_RELAX() _mm_pause()
#else
#define XTGRAD_CPU_RELAX() ((void)0)
#endif

namespace xtgrad {

namespace {

thread_local bool inside_chunk = false;  // no nested parallel_for

class Pool {
public:
    explicit Pool(int workers) {
        for (int i = 0; i < workers; ++i) threads_.emplace_back([this, i] { loop(i); });
    }
    ~Pool() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
            generation_.fetch_add(1, std::memory_order_release);
        }
        wake_.notify_all();
        for (std::thread& t : threads_) t.join();
    }
    int workers() const { return static_cast<int>(threads_.size()); }

    // Runs fn on chunks 0 .. chunks-1 of [0, n), chunk 0 on the calling thread.
    void run(std::size_t n, std::size_t chunks, const std::function<void(std::size_t, std::size_t)>& fn) {
        std::lock_guard<std::mutex> one_job(job_mutex_);  // two callers never share the pool
        {
            std::lock_guard<std::mutex> lock(mutex_);
            fn_ = &fn;
            n_ = n;
            chunks_ = chunks;
            error_ = nullptr;
            pending_.store(static_cast<int>(chunks - 1), std::memory_order_relaxed);
            generation_.fetch_add(1, std::memory_order_release);
        }
        wake_.notify_all();
        run_chunk(0);
        for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin)  // the workers' chunks
            if (spin < 1024)
                XTGRAD_CPU_RELAX();
            else
                std::this_thread::yield();  // a worker was descheduled: give it the core
        if (error_) std::rethrow_exception(error_);
    }

private:
    void run_chunk(std::size_t c) {
        const std::size_t begin = n_ * c / chunks_, end = n_ * (c + 1) / chunks_;
        inside_chunk = true;
        try {
            (*fn_)(begin, end);
        } catch (...) {
            std::lock_guard<std::mutex> lock(mutex_);
            if (!error_) error_ = std::current_exception();
        }
        inside_chunk = false;
    }

    void loop(int index) {
        unsigned long seen = 0;
        for (;;) {
            // Wait for the next job: spin a few µs, then yield a while (the core goes to any
            // runnable thread, e.g. an OpenBLAS worker, at once), then sleep on the condition.
            for (int spin = 0; spin < 256 && generation_.load(std::memory_order_acquire) == seen; ++spin)
                XTGRAD_CPU_RELAX();
            for (int y = 0; y < 64 && generation_.load(std::memory_order_acquire) == seen; ++y)
                std::this_thread::yield();
            std::size_t chunks;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
                seen = generation_.load(std::memory_order_acquire);
                if (stop_) return;
                chunks = chunks_;
            }
            const std::size_t c = static_cast<std::size_t>(index) + 1;
            if (c < chunks) {  // the job's fields stay fixed until this chunk is done
                run_chunk(c);
                pending_.fetch_sub(1, std::memory_order_acq_rel);
            }
        }
    }

    std::vector<std::thread> threads_;
    std::mutex mutex_, job_mutex_;
    std::condition_variable wake_;
    std::atomic<unsigned long> generation_{0};
    std::atomic<int> pending_{0};
    const std::function<void(std::size_t, std::size_t)>* fn_ = nullptr;
    std::size_t n_ = 0, chunks_ = 1;
    std::exception_ptr error_;
    bool stop_ = false;
};

std::mutex config_mutex;
int configured_threads = 1;
std::unique_ptr<Pool> pool;

}  // namespace

void set_num_threads(int n) {
    if (n < 1 || n > kMaxThreads)
        fail("set_num_threads: {} threads asked for; xtgrad's pool takes 1 to {} (the calling thread included)", n,
             kMaxThreads);
    std::lock_guard<std::mutex> lock(config_mutex);
    if (n == configured_threads) return;
    pool.reset();
    configured_threads = n;
    if (n > 1) pool = std::make_unique<Pool>(n - 1);
}

int num_threads() { return configured_threads; }

void parallel_for(std::size_t n, std::size_t grain, const std::function<void(std::size_t, std::size_t)>& fn) {
    grain = std::max<std::size_t>(grain, 1);
    const std::size_t chunks = std::min<std::size_t>(static_cast<std::size_t>(configured_threads), n / grain);
    if (chunks <= 1 || !pool || inside_chunk) {
        if (n > 0) fn(0, n);
        return;
    }
    pool->run(n, chunks, fn);
}

void parallel_rows(std::size_t rows, std::size_t row_len, const std::function<void(std::size_t, std::size_t)>& fn) {
    parallel_for(rows, std::max<std::size_t>(1, kParallelElements / std::max<std::size_t>(row_len, 1)), fn);
}

}  // namespace xtgrad
